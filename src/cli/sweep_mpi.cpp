// kdsim sweep under mpirun: MPI's world gives each process its rank, and rank 0 gathers every
// rank's outcomes (MPI_Gather of the lengths, MPI_Gatherv of the bytes). Built only when CMake
// finds MPI (KDSIM_HAVE_MPI).
#include "cli/sweep.h"

#include <mpi.h>

#include <stdexcept>

namespace kdsim::cli::sweep::mpi {

World init() {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) MPI_Init(nullptr, nullptr);
    World w;
    MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w.size);
    return w;
}

void finalize() {
    int done = 0;
    MPI_Finalized(&done);
    if (!done) MPI_Finalize();
}

std::vector<std::string> gather(const std::string& mine) {
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (mine.size() > static_cast<std::size_t>(INT32_MAX)) throw std::runtime_error("a rank's results exceed 2 GiB");
    int len = static_cast<int>(mine.size());
    std::vector<int> lens(rank == 0 ? size : 0), offsets(rank == 0 ? size : 0);
    MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::string all;
    if (rank == 0) {
        long long total = 0;
        for (int r = 0; r < size; ++r) {
            offsets[r] = static_cast<int>(total);
            total += lens[r];
        }
        if (total > INT32_MAX) throw std::runtime_error("the sweep's results exceed 2 GiB");
        all.resize(static_cast<std::size_t>(total));
    }
    MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
    std::vector<std::string> out;
    for (int r = 0; rank == 0 && r < size; ++r)
        out.push_back(all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lens[r])));
    return out;
}

int broadcast(int value) {
    MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return value;
}

} // namespace kdsim::cli::sweep::mpi
