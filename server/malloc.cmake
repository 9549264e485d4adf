# The allocator linked into rankwire-server (and the codec benchmarks, so the
# protobuf baseline and rankbin are measured under the same one).
#
# jemalloc by default: under closed-loop load glibc's malloc returns each
# response's megabyte-sized buffers and the per-item log strings to the
# kernel and faults fresh pages back in on the next request (sysmalloc,
# madvise and page faults were ~40 % of the server's profile, the encoder
# < 3 %); jemalloc keeps those extents. The measurement that chose it:
# docs/bench-notes/2026-11-30-allocator.md. jemalloc_conf.cc sets four of its
# options so that a large result's freed memory is reused, and still given
# back once unused (docs/bench-notes/2026-12-04-allocator-large-results.md).
# glibc is the fallback and is forced in sanitizer builds (ASan brings its
# own allocator).
set(RANKWIRE_MALLOC "jemalloc" CACHE STRING
    "Allocator linked into rankwire-server and the benchmarks: jemalloc, tcmalloc or glibc")
set_property(CACHE RANKWIRE_MALLOC PROPERTY STRINGS jemalloc tcmalloc glibc)

add_library(rankwire_malloc INTERFACE)
add_library(rankwire::malloc ALIAS rankwire_malloc)
set(_rankwire_malloc ${RANKWIRE_MALLOC})
if(RANKWIRE_SANITIZE)
  set(_rankwire_malloc glibc)
endif()
if(_rankwire_malloc STREQUAL "jemalloc")
  find_library(RANKWIRE_JEMALLOC_LIBRARY NAMES jemalloc REQUIRED)
  set(_rankwire_malloc_lib ${RANKWIRE_JEMALLOC_LIBRARY})
  # Compiled into every executable that links rankwire::malloc and never
  # into a library (the generator expression), so malloc_conf is defined
  # once per binary: jemalloc_conf.cc says why.
  target_sources(rankwire_malloc INTERFACE
    $<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:${CMAKE_CURRENT_LIST_DIR}/jemalloc_conf.cc>)
  target_compile_definitions(rankwire_malloc INTERFACE RANKWIRE_JEMALLOC_CONF=1)
  target_include_directories(rankwire_malloc INTERFACE ${PROJECT_SOURCE_DIR})
elseif(_rankwire_malloc STREQUAL "tcmalloc")
  # The minimal variant: the allocator without the heap profiler.
  find_library(RANKWIRE_TCMALLOC_LIBRARY NAMES tcmalloc_minimal REQUIRED)
  set(_rankwire_malloc_lib ${RANKWIRE_TCMALLOC_LIBRARY})
elseif(NOT _rankwire_malloc STREQUAL "glibc")
  message(FATAL_ERROR "RANKWIRE_MALLOC must be jemalloc, tcmalloc or glibc, not '${RANKWIRE_MALLOC}'")
endif()
if(_rankwire_malloc_lib)
  # --no-as-needed: nothing calls the library by name (it replaces malloc),
  # so an --as-needed linker would drop it.
  target_link_libraries(rankwire_malloc INTERFACE
    "-Wl,--push-state,--no-as-needed" ${_rankwire_malloc_lib} "-Wl,--pop-state")
endif()
target_compile_definitions(rankwire_malloc INTERFACE RANKWIRE_MALLOC_NAME="${_rankwire_malloc}")
set(RANKWIRE_MALLOC_KIND ${_rankwire_malloc})
message(STATUS "rankwire: allocator ${_rankwire_malloc}")
