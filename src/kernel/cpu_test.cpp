#include "kernel/cpu.h"
#include <gtest/gtest.h>
