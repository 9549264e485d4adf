# rankwire_component_headers(<target> <folder>)
#
# Makes `#include "<folder>/x.h"` work for <target> and for whoever links
# it, and nothing else: the include directory is a build-tree directory
# holding one symlink, <folder> -> the source folder. Linking
# rankwire::codec therefore exposes codec/ headers only; a benchmark that
# includes tests/support/... without linking the support library fails to
# compile instead of silently reaching into the tree (which a repo-root
# include directory allowed).
#
# That directory is a build-tree path, so it is a $<BUILD_INTERFACE:...>:
# the installed targets (cmake/RankwireInstall.cmake) use include/rankwire,
# where the public headers keep the same "<folder>/x.h" paths.
function(rankwire_component_headers target folder)
  string(REPLACE "/" "_" _flat "${folder}")
  set(_root "${PROJECT_BINARY_DIR}/include/${_flat}")
  get_filename_component(_parent "${_root}/${folder}" DIRECTORY)
  file(MAKE_DIRECTORY "${_parent}")
  if(NOT EXISTS "${_root}/${folder}")
    file(CREATE_LINK "${PROJECT_SOURCE_DIR}/${folder}" "${_root}/${folder}" SYMBOLIC)
  endif()
  get_target_property(_type ${target} TYPE)
  if(_type STREQUAL "INTERFACE_LIBRARY")
    target_include_directories(${target} INTERFACE "$<BUILD_INTERFACE:${_root}>")
  else()
    target_include_directories(${target} PUBLIC "$<BUILD_INTERFACE:${_root}>")
  endif()
endfunction()
