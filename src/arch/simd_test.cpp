#include "arch/simd.h"
#include <gtest/gtest.h>
