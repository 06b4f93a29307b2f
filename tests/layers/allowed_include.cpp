// Compiled as part of the kernel layer: its own headers and the engine's below it are visible.
// The control for forbidden_include.cpp: this file must compile.
#include "engine/simulation.h"
#include "kernel/cpu.h"

int kdsim_layer_probe_allowed() { return 0; }
