# Installing onnx-fuse (cmake --install build [--prefix P]) and packaging it
# (cpack -G DEB): the shared library libonnxfuse (every stage; its dependencies
# are its own), exported as the CMake package onnxfuse (find_package(onnxfuse)
# -> onnxfuse::onnxfuse), a pkg-config file, the public headers (include/onnxfuse/:
# no ONNX, protobuf or JSON type in them), the onnx-fuse executable, the Python
# module (python/CMakeLists.txt installs it) and the built-in patterns, which
# an installed executable finds relative to its prefix (BuiltinPatternDir:
# <prefix>/bin/.. /share/onnx-fuse/patterns).
include(CMakePackageConfigHelpers)

set_target_properties(onnxfuse_shared PROPERTIES EXPORT_NAME onnxfuse)
install(TARGETS onnxfuse_shared EXPORT onnxfuseTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS onnx-fuse RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/onnxfuse DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/patterns/ DESTINATION ${ONNXFUSE_PATTERNS_INSTALL_SUBDIR}
        FILES_MATCHING PATTERN "*.onnxtxt")

set(ONNXFUSE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/onnxfuse)
install(EXPORT onnxfuseTargets NAMESPACE onnxfuse:: DESTINATION ${ONNXFUSE_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/onnxfuseConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/onnxfuseConfig.cmake INSTALL_DESTINATION ${ONNXFUSE_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/onnxfuseConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/onnxfuseConfig.cmake ${PROJECT_BINARY_DIR}/onnxfuseConfigVersion.cmake
        DESTINATION ${ONNXFUSE_CMAKE_DIR})

# pkg-config: relocatable (prefix from the .pc file's own place).
configure_file(${PROJECT_SOURCE_DIR}/cmake/onnxfuse.pc.in ${PROJECT_BINARY_DIR}/onnxfuse.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/onnxfuse.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# cpack -G DEB: the library with its headers, the CLI, the patterns and the
# Python module. Depends: the Debian 12 runtime packages that libonnxfuse.so,
# onnx-fuse and the module load (their NEEDED entries: oneDNN, libonnx and
# protobuf, spdlog and fmt, LLVM's OpenMP runtime, zlib); no -dev package, the
# public headers include the C++ standard library only.
set(CPACK_PACKAGE_NAME onnx-fuse)
set(CPACK_PACKAGE_VENDOR "onnx-fuse")
set(CPACK_PACKAGE_CONTACT "onnx-fuse maintainers <onnx-fuse@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "ONNX operator fusion and a oneDNN CPU runtime: onnx-fuse and its C++ library")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libdnnl2 (>= 2.6), libonnx1 (>= 1.12), libprotobuf32, libspdlog1.10, libfmt9, libomp5-14, zlib1g, libstdc++6")
if(ONNXFUSE_PYTHON)
  # The module (python/) is built for this interpreter's minor version (its ABI).
  set(_py ${Python_VERSION_MAJOR}.${Python_VERSION_MINOR})
  math(EXPR _py_next "${Python_VERSION_MINOR} + 1")
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS
         ", python3 (>= ${_py}), python3 (<< ${Python_VERSION_MAJOR}.${_py_next}), python3-numpy")
  string(APPEND CPACK_PACKAGE_DESCRIPTION_SUMMARY ", and the Python module onnxfuse")
endif()
include(CPack)
