# What `cmake --install` puts under the prefix for callers of the service
# (issue 38; docs/CLIENTS.md, "C++"), beside rankwire-server and its models
# (server/CMakeLists.txt):
#
#   lib/librankwire_{client,codec,compression,proto,rpc,base}.a
#   include/rankwire/<folder>/x.h      the public headers, RANKWIRE_PUBLIC_HEADERS
#   include/rankwire/rank/v1/          rank.proto, rank.pb.h, rank.grpc.pb.h
#   lib/cmake/rankwire/                rankwireConfig.cmake (+ Version, Targets):
#                                      find_package(rankwire CONFIG) -> rankwire::client
#   lib/pkgconfig/rankwire-client.pc   pkg-config --cflags --libs rankwire-client
#
# Headers keep the paths the code includes them by ("client/rank_client.h",
# "rank/v1/rank.pb.h") under include/rankwire, so a prefix of /usr/local
# gets no top-level "client/" or "codec/" folder of ours.
#
# Only the caller's side is installed: the client, the codecs it decodes
# with and what those link (proto, rpc, compression, base). Headers are a
# chosen list, not a folder copy: server internals and the codecs' private
# helpers (codec/coding.h, codec/compression.h, codec/rankbin/format.h, ...)
# stay out, and tests/install checks that the list is closed (every
# rankwire header an installed header includes is installed) and that it
# is the list docs/CLIENTS.md documents.
#
# The libraries are static, compiled as the product is (position-
# independent executables, Debian's default; not for linking into a shared
# object). A program links them against the same gRPC, protobuf, Abseil
# and zstd the prefix was built with; rankwireConfig.cmake finds those with
# find_dependency and refuses a protobuf or gRPC of another minor version.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The public headers: what a caller needs to rank, read lazily, fetch logs,
# set up TLS and convert statuses. Closed under #include (tests/install).
set(RANKWIRE_PUBLIC_HEADERS
  client/rank_client.h
  client/tls.h
  codec/buffer.h
  codec/builtin_codecs.h
  codec/codec.h
  codec/envelope.h
  codec/protobuf/protobuf_codec.h
  codec/rank_result.h
  codec/rankbin/rankbin_codec.h
  codec/rankbin/reader.h
  codec/rankbin/writer.h
  codec/registry.h
  codec/result_bound.h
  rpc/status.h
  rpc/transport_args.h
)

set(RANKWIRE_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/rankwire)
set(RANKWIRE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/rankwire)

# Exported as rankwire::<name>, the names the build tree's aliases use.
set(_rankwire_installed
  rankwire_client rankwire_codec rankwire_compression rankwire_proto rankwire_rpc rankwire_base)
foreach(_t ${_rankwire_installed})
  string(REPLACE "rankwire_" "" _name ${_t})
  set_target_properties(${_t} PROPERTIES EXPORT_NAME ${_name})
endforeach()
install(TARGETS ${_rankwire_installed}
  EXPORT rankwireTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT client
  INCLUDES DESTINATION ${RANKWIRE_INSTALL_INCLUDEDIR})

foreach(_h ${RANKWIRE_PUBLIC_HEADERS})
  get_filename_component(_dir ${_h} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${_h}
    DESTINATION ${RANKWIRE_INSTALL_INCLUDEDIR}/${_dir} COMPONENT client)
endforeach()

# protoc's output (it matches the protobuf the libraries were built with)
# and the contract it came from, for callers who generate their own stubs:
#   protoc -I <prefix>/include/rankwire rank/v1/rank.proto ...
get_target_property(_proto_bin rankwire_proto BINARY_DIR)
install(FILES
    ${PROJECT_SOURCE_DIR}/proto/rank/v1/rank.proto
    ${_proto_bin}/gen/rank/v1/rank.pb.h
    ${_proto_bin}/gen/rank/v1/rank.grpc.pb.h
  DESTINATION ${RANKWIRE_INSTALL_INCLUDEDIR}/rank/v1 COMPONENT client)

install(EXPORT rankwireTargets
  NAMESPACE rankwire::
  DESTINATION ${RANKWIRE_INSTALL_CMAKEDIR}
  COMPONENT client)

# The generated rank.v1 code and the static libraries hold the protobuf and
# gRPC versions they were built with; the config refuses another minor.
string(REGEX MATCH "^[0-9]+\\.[0-9]+" RANKWIRE_PROTOBUF_MINOR "${Protobuf_VERSION}")
string(REGEX MATCH "^[0-9]+\\.[0-9]+" RANKWIRE_GRPC_MINOR "${gRPC_VERSION}")
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/rankwireConfig.cmake.in
  ${PROJECT_BINARY_DIR}/rankwireConfig.cmake
  INSTALL_DESTINATION ${RANKWIRE_INSTALL_CMAKEDIR})
# docs/CLIENTS.md, "Compatibility promise": the caller's API keeps source
# compatibility within a major version.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/rankwireConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES
    ${PROJECT_BINARY_DIR}/rankwireConfig.cmake
    ${PROJECT_BINARY_DIR}/rankwireConfigVersion.cmake
  DESTINATION ${RANKWIRE_INSTALL_CMAKEDIR} COMPONENT client)

# pkg-config: relocatable (paths from ${pcfiledir}), so the file is right
# under whatever --prefix `cmake --install` is given.
file(RELATIVE_PATH RANKWIRE_PC_TO_PREFIX
  /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${PROJECT_SOURCE_DIR}/cmake/rankwire-client.pc.in
  ${PROJECT_BINARY_DIR}/rankwire-client.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/rankwire-client.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT client)
