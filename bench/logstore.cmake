# logstore_bench: the log store writer's ceiling into a real redis-server and
# Redis memory per request, with and without zstd values. A standalone
# program (seconds-long runs, variants interleaved by hand), not a Google
# Benchmark; scripts/bench_logstore.sh builds and runs it pinned. Variants:
# representation (text, zstd, zstd with a trained dictionary, structured
# records) and writer count.
# It starts redis-server with the tests' RedisProcess helper, so it needs the
# test support library.
if(RANKWIRE_BUILD_TESTS)
  add_executable(logstore_bench ${CMAKE_CURRENT_LIST_DIR}/logstore_bench.cc)
  # The log lines are the ranker's, from the workload generator's requests.
  target_compile_definitions(logstore_bench PRIVATE
    ${RANKWIRE_MODEL_DEFINE})
  target_link_libraries(logstore_bench PRIVATE
    rankwire::logstore rankwire::ranking rankwire::workload rankwire_test_support
    rankwire::base absl::flags absl::strings absl::str_format absl::time
    zstd::libzstd_shared)
else()
  message(STATUS "logstore_bench skipped: it needs RANKWIRE_BUILD_TESTS=ON (tests/support)")
endif()
