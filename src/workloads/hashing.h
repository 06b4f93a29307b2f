// Hashing workloads of a boot (E2): a user process loading kernel modules, whose finit_module()
// hashes each module for the signature check (kernel/module/signing.c, module_sig_check ->
// mod_verify_sig; Debian adds a hash of the whole file for the blacklist check), and a kernel
// thread hashing self-test vectors (crypto/testmgr.c, cryptomgr). Both call the arch glue
// (crypto_shash_digest) and so exercise the SIMD bracket policy of the machine.
#pragma once

#include "crypto/digest.h"
#include "kernel/sched.h"
#include "workloads/config.h"
#include "workloads/workload.h"

namespace kdsim::workloads {

class HashWorkloadBase : public Workload {
public:
    // `impl` absent: the best the CPU has for `alg`.
    HashWorkloadBase(Env env, crypto::HashAlg alg, std::optional<crypto::HashImpl> impl)
        : Workload(env), alg_(alg), impl_(impl ? *impl : crypto::best_hash_impl(env.hash, alg)) {}
    bool finite() const override { return true; }

protected:
    // The workload's last hash ended at `finished`: it is done, and the run no longer waits for it.
    void complete(engine::Tick finished) {
        finished_ = finished;
        done_ = true;
        env_.completion.done();
    }
    // The result of workload `name`, of kind "<kind> <alg>-<impl>".
    results::WorkloadResult hash_result(const std::string& name, std::string_view kind) const {
        return base_result(name, std::string(kind) + " " + std::string(crypto::to_string(alg_)) + "-" +
                                     std::string(crypto::to_string(impl_)));
    }
    crypto::HashAlg alg_;
    crypto::HashImpl impl_;
    // crypto_shash_digest of `len` bytes (functional mode: of buf[0, len)).
    engine::Task<> hash_buffer(crypto::HashAlg alg, crypto::HashImpl impl, std::uint64_t len,
                               const std::vector<std::uint8_t>& buf);
    void add_common(results::WorkloadResult& r) const;

    crypto::ShashStats stats_;
    std::vector<std::uint8_t> buf_;
    std::uint64_t buffers_ = 0;
    engine::Tick started_ = 0;
    engine::Tick finished_ = 0;
    bool done_ = false;
    std::uint64_t clobbered_calls_ = 0;
};

// Loaders in parallel as systemd-udevd runs them at coldplug: `workers` processes, each taking
// the next module of the list (udevd hands each uevent to a free worker, in queue order, at
// most children_max at once); with one worker, modprobe loading the list in order.
class ModuleLoad final : public HashWorkloadBase {
public:
    ModuleLoad(Env env, ModuleLoadWorkload cfg);
    void start() override;
    results::WorkloadResult result() const override;

private:
    static engine::Task<> loader(ModuleLoad& w);
    ModuleLoadWorkload cfg_;
    std::vector<engine::Tick> load_times_;
    std::uint64_t next_ = 0;     // the next module to load, over all passes
    std::uint32_t running_ = 0;  // loaders not yet finished
};

class HashList final : public HashWorkloadBase {
public:
    HashList(Env env, HashListWorkload cfg);
    void start() override;
    results::WorkloadResult result() const override;

private:
    static engine::Task<> cryptomgr(HashList& w);
    HashListWorkload cfg_;
};

class Tcrypt final : public HashWorkloadBase {
public:
    Tcrypt(Env env, TcryptWorkload cfg);
    void start() override { start_finite_process(cfg_.name, insmod(*this)); }
    results::WorkloadResult result() const override;

private:
    static engine::Task<> insmod(Tcrypt& w);
    TcryptWorkload cfg_;
    std::vector<engine::Tick> op_times_;
};

} // namespace kdsim::workloads
