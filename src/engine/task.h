// Task<T>: the one coroutine type of kdsim. A simulated kernel path is a Task that awaits
// other Tasks and the awaitables of the CPU model (work that takes cycles, preemption points).
// Awaiting a Task starts it and transfers control symmetrically (no stack growth); when it
// finishes, control returns to the awaiter. A Task that nobody awaits is a *root*: its owner
// starts it with resume() and learns that it finished from done(). Frames come from FramePool.
#pragma once

#include "engine/frame_pool.h"

#include <coroutine>
#include <exception>
#include <optional>
#include <utility>

namespace kdsim::engine {

template <class T = void>
class Task;

namespace detail {

struct PromiseBase {
    std::coroutine_handle<> continuation;
    std::exception_ptr error;

    static void* operator new(std::size_t n) { return FramePool::allocate(n); }
    static void operator delete(void* p, std::size_t n) noexcept { FramePool::deallocate(p, n); }

    std::suspend_always initial_suspend() noexcept { return {}; }

    struct FinalAwaiter {
        bool await_ready() noexcept { return false; }
        template <class P>
        std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
            if (auto c = h.promise().continuation) return c;
            return std::noop_coroutine();
        }
        void await_resume() noexcept {}
    };
    FinalAwaiter final_suspend() noexcept { return {}; }
    void unhandled_exception() noexcept { error = std::current_exception(); }
};

template <class T>
struct Promise : PromiseBase {
    std::optional<T> value;
    Task<T> get_return_object() noexcept;
    template <class U>
    void return_value(U&& v) {
        value.emplace(std::forward<U>(v));
    }
};

template <>
struct Promise<void> : PromiseBase {
    Task<void> get_return_object() noexcept;
    void return_void() noexcept {}
};

} // namespace detail

template <class T>
class [[nodiscard]] Task {
public:
    using promise_type = detail::Promise<T>;
    using Handle = std::coroutine_handle<promise_type>;

    Task() = default;
    explicit Task(Handle h) : h_(h) {}
    Task(Task&& o) noexcept : h_(std::exchange(o.h_, {})) {}
    Task& operator=(Task&& o) noexcept {
        if (this != &o) {
            reset();
            h_ = std::exchange(o.h_, {});
        }
        return *this;
    }
    Task(const Task&) = delete;
    Task& operator=(const Task&) = delete;
    ~Task() { reset(); }

    bool valid() const { return static_cast<bool>(h_); }
    bool done() const { return h_ && h_.done(); }
    std::coroutine_handle<> handle() const { return h_; }

    // For a root task: rethrows an exception that escaped the coroutine body.
    void rethrow_if_failed() const {
        if (h_ && h_.promise().error) std::rethrow_exception(h_.promise().error);
    }

    void reset() {
        if (h_) h_.destroy();
        h_ = {};
    }

    // Awaiting a Task runs it to completion as part of the awaiting coroutine.
    auto operator co_await() && noexcept {
        struct Awaiter {
            Handle h;
            bool await_ready() const noexcept { return false; }
            std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept {
                h.promise().continuation = awaiting;
                return h;
            }
            T await_resume() {
                if (h.promise().error) std::rethrow_exception(h.promise().error);
                if constexpr (!std::is_void_v<T>) return std::move(*h.promise().value);
            }
        };
        return Awaiter{h_};
    }

private:
    Handle h_;
};

namespace detail {
template <class T>
Task<T> Promise<T>::get_return_object() noexcept {
    return Task<T>(std::coroutine_handle<Promise<T>>::from_promise(*this));
}
inline Task<void> Promise<void>::get_return_object() noexcept {
    return Task<void>(std::coroutine_handle<Promise<void>>::from_promise(*this));
}
} // namespace detail

} // namespace kdsim::engine
