# Installing onnx-fuse (cmake --install build [--prefix P]) and packaging it
# (cpack -G DEB): the stage libraries and the umbrella target onnxfuse, exported
# as the CMake package onnxfuse (find_package(onnxfuse) -> onnxfuse::onnxfuse),
# a pkg-config file, the public headers, the onnx-fuse executable, the Python
# module (python/CMakeLists.txt installs it) and the built-in patterns, which
# an installed executable finds relative to its prefix (BuiltinPatternDir:
# <prefix>/bin/.. /share/onnx-fuse/patterns).
include(CMakePackageConfigHelpers)

# Most dependent first: the order a static link needs (also pkg-config's -l list).
set(ONNXFUSE_INSTALLED_LIBS
    onnxfuse_session onnxfuse_app onnxfuse_plan onnxfuse_plan_proto onnxfuse_runtime onnxfuse_lower
    onnxfuse_pipeline onnxfuse_report onnxfuse_write onnxfuse_fuse onnxfuse_patterns onnxfuse_classify
    onnxfuse_rewrite onnxfuse_load onnxfuse_eval onnxfuse_kernels onnxfuse_ir onnxfuse_common)
install(TARGETS onnxfuse onnxfuse_onnx ${ONNXFUSE_INSTALLED_LIBS}
        EXPORT onnxfuseTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
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
list(TRANSFORM ONNXFUSE_INSTALLED_LIBS PREPEND "-l" OUTPUT_VARIABLE _onnxfuse_l)
list(JOIN _onnxfuse_l " " ONNXFUSE_PC_LIBS)
get_filename_component(ONNXFUSE_PC_LIBOMP "${ONNXFUSE_LIBOMP}" DIRECTORY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/onnxfuse.pc.in ${PROJECT_BINARY_DIR}/onnxfuse.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/onnxfuse.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# cpack -G DEB: a development package (static libraries and headers) with the
# Debian 12 packages its headers and libraries need.
set(CPACK_PACKAGE_NAME onnx-fuse)
set(CPACK_PACKAGE_VENDOR "onnx-fuse")
set(CPACK_PACKAGE_CONTACT "onnx-fuse maintainers <onnx-fuse@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "ONNX operator fusion and a oneDNN CPU runtime: onnx-fuse and its C++ library")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libdnnl-dev (>= 2.6), libonnx-dev (>= 1.12), libprotobuf-dev, protobuf-compiler, libspdlog-dev, nlohmann-json3-dev, zlib1g-dev, libomp-14-dev, libstdc++6")
if(ONNXFUSE_PYTHON)
  # The module (python/) is built for this interpreter's minor version (its ABI).
  set(_py ${Python_VERSION_MAJOR}.${Python_VERSION_MINOR})
  math(EXPR _py_next "${Python_VERSION_MINOR} + 1")
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS
         ", python3 (>= ${_py}), python3 (<< ${Python_VERSION_MAJOR}.${_py_next}), python3-numpy")
  string(APPEND CPACK_PACKAGE_DESCRIPTION_SUMMARY ", and the Python module onnxfuse")
endif()
include(CPack)
