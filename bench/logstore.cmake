# logstore_bench: the log store writer's ceiling into a real redis-server and
# Redis memory per request, with and without zstd values. A standalone
# program (seconds-long runs, variants interleaved by hand), not a Google
# Benchmark; scripts/bench_logstore.sh builds and runs it pinned.
# It starts redis-server with the tests' RedisProcess helper, so it needs the
# test support library.
if(RANKWIRE_BUILD_TESTS)
  add_executable(logstore_bench ${CMAKE_CURRENT_LIST_DIR}/logstore_bench.cc)
  # The log lines are the ranker's, from the workload generator's requests.
  target_compile_definitions(logstore_bench PRIVATE
    RANKWIRE_MODEL_PATH="${PROJECT_SOURCE_DIR}/server/models/ecom_search_lr.model")
  target_link_libraries(logstore_bench PRIVATE
    rankwire::logstore rankwire::server rankwire::workload rankwire_test_support
    rankwire::base absl::flags absl::strings absl::str_format absl::time)
else()
  message(STATUS "logstore_bench skipped: it needs RANKWIRE_BUILD_TESTS=ON (tests/support)")
endif()
