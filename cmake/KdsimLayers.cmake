# Layers enforced at compile time.
#
# Every source includes headers as "<layer>/<file>.h". Instead of exporting the whole src/ folder
# (which lets any file include any layer's header, so a header-only call across layers compiles
# and links), each layer gets an include root of its own in the build tree that holds exactly one
# entry: a symlink <layer> -> src/<layer>. A library adds its own root PUBLIC, so a target sees
# its own layer's headers and those of the libraries it links PUBLIC, and nothing else:
# kernel/softirq.cpp cannot include "net/napi.h" because no include root of the kernel target
# has a net/ entry. tests/layers proves it with a forbidden include that must fail to compile.

set(KDSIM_LAYER_ROOT ${PROJECT_BINARY_DIR}/layers)

# kdsim_layer(<target> <layer>): <target> (a library or executable in src/<layer>) exports the
# headers of src/<layer> to itself and to whoever links it.
function(kdsim_layer target layer)
  if(NOT IS_DIRECTORY ${PROJECT_SOURCE_DIR}/src/${layer})
    message(FATAL_ERROR "kdsim_layer(${target} ${layer}): no folder src/${layer}")
  endif()
  set(root ${KDSIM_LAYER_ROOT}/${layer})
  if(NOT EXISTS ${root}/${layer})
    file(MAKE_DIRECTORY ${root})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${layer} ${root}/${layer} SYMBOLIC)
  endif()
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    target_include_directories(${target} INTERFACE ${root})
  elseif(type STREQUAL "EXECUTABLE")
    target_include_directories(${target} PRIVATE ${root})
  else()
    target_include_directories(${target} PUBLIC ${root})
  endif()
endfunction()

# kdsim_check_no_src_include(<target>...): fails the configure step when a target still puts
# the whole src/ folder on its include path, which would bypass the layer roots.
function(kdsim_check_no_src_include)
  foreach(t ${ARGN})
    foreach(prop INCLUDE_DIRECTORIES INTERFACE_INCLUDE_DIRECTORIES)
      get_target_property(dirs ${t} ${prop})
      if(dirs)
        foreach(d ${dirs})
          if(d STREQUAL "${PROJECT_SOURCE_DIR}/src" OR d STREQUAL "${PROJECT_SOURCE_DIR}/src/")
            message(FATAL_ERROR "target ${t} has ${d} on its include path; use kdsim_layer() "
                                "so that layers stay enforced (cmake/KdsimLayers.cmake)")
          endif()
        endforeach()
      endif()
    endforeach()
  endforeach()
endfunction()

# Every target defined under <dir> and its subfolders.
function(kdsim_targets_in dir out)
  get_property(ts DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(s ${subs})
    kdsim_targets_in(${s} more)
    list(APPEND ts ${more})
  endforeach()
  set(${out} ${ts} PARENT_SCOPE)
endfunction()

# kdsim_unit_test(<target> <prefix> <source> <libraries>...): a GoogleTest program beside a
# layer's code, its tests named "<prefix>-<Suite>.<Test>" and labelled unit. Nothing without tests.
function(kdsim_unit_test target prefix source)
  if(KDSIM_BUILD_TESTS)
    add_executable(${target} ${source})
    target_link_libraries(${target} PRIVATE ${ARGN} GTest::gtest_main)
    gtest_discover_tests(${target} TEST_PREFIX "${prefix}-" PROPERTIES LABELS unit)
  endif()
endfunction()
