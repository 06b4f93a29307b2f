// Compiled as part of the kernel layer: the kernel must not see the network stack, which sits
// above it. This file must FAIL to compile (tests/layers/CMakeLists.txt).
#include "kernel/cpu.h"
#include "net/napi.h"

int kdsim_layer_probe_forbidden() { return 0; }
