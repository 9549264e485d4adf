# Unit tests sit beside the code they test (foo.cc, foo_test.cc), and each
# component's CMakeLists.txt adds its own inside `if(RANKWIRE_BUILD_TESTS)`.
# Included from the top-level CMakeLists.txt after enable_testing() and
# include(GoogleTest), so the function exists before the components use it.
#
# rankwire_unit_test(<source> <libraries...>)
#
# <source> is the test file without ".cc", relative to the calling folder
# ("ranker_test", or "rankbin/rankbin_format_test" for a subfolder). Builds
# it into the executable named after the file (with GTest::gtest_main and
# GTest::gmock) and registers its tests with ctest as "unit.<Suite>.<Test>"
# (label "unit"). Test sources include shared helpers by their path
# ("tests/support/random_result.h") through rankwire_test_headers.
function(rankwire_unit_test source)
  get_filename_component(name ${source} NAME)
  add_executable(${name} ${source}.cc)
  # For tests that read the spec they check (docs/FORMAT.md).
  target_compile_definitions(${name} PRIVATE RANKWIRE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  target_link_libraries(${name} PRIVATE ${ARGN} rankwire_test_headers GTest::gmock GTest::gtest_main)
  gtest_discover_tests(${name}
    TEST_PREFIX "unit."
    DISCOVERY_TIMEOUT 30
    PROPERTIES LABELS unit TIMEOUT 60)
endfunction()
