# Install rules: the shared and static libraries, the header, a CMake package
# (find_package(clnorm CONFIG) gives clnorm::clnorm and clnorm::clnorm_static, with a
# version file) and clnorm.pc for pkg-config. Components: runtime (the shared
# library), development (everything a consumer builds against) and tools.
include(CMakePackageConfigHelpers)

set(CLNORM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/clnorm CACHE STRING
    "Where the CMake package files are installed, relative to the prefix")

install(TARGETS clnorm EXPORT clnormTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
          NAMELINK_COMPONENT development
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development)
install(TARGETS clnorm_static EXPORT clnormTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development)
install(FILES ${PROJECT_SOURCE_DIR}/include/clnorm.h ${PROJECT_SOURCE_DIR}/include/clnorm_advanced.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development)

install(EXPORT clnormTargets NAMESPACE clnorm:: DESTINATION ${CLNORM_CMAKE_DIR}
        COMPONENT development)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/clnormConfig.cmake.in
  ${PROJECT_BINARY_DIR}/clnormConfig.cmake INSTALL_DESTINATION ${CLNORM_CMAKE_DIR})
# Before 1.0 a minor version may break the API, so only the same minor matches.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_clnorm_compat SameMinorVersion)
else()
  set(_clnorm_compat SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/clnormConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${_clnorm_compat})
install(FILES ${PROJECT_BINARY_DIR}/clnormConfig.cmake
              ${PROJECT_BINARY_DIR}/clnormConfigVersion.cmake
        DESTINATION ${CLNORM_CMAKE_DIR} COMPONENT development)

# pkg-config: the public header includes <CL/cl.h>, so OpenCL is a public
# requirement. Where the OpenCL loader ships OpenCL.pc (ocl-icd and the Khronos
# loader do) it is named in Requires; elsewhere its library is linked directly.
find_package(PkgConfig QUIET)
set(CLNORM_PC_REQUIRES "")
set(CLNORM_PC_OPENCL_LIBS "")
if(PKG_CONFIG_FOUND)
  pkg_check_modules(_clnorm_pc_opencl QUIET OpenCL)
endif()
if(_clnorm_pc_opencl_FOUND)
  set(CLNORM_PC_REQUIRES "OpenCL")
else()
  set(CLNORM_PC_OPENCL_LIBS " -lOpenCL")
endif()
if(CMAKE_THREAD_LIBS_INIT)
  set(CLNORM_PC_THREADS "${CMAKE_THREAD_LIBS_INIT}")
else()
  set(CLNORM_PC_THREADS "-pthread")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(CLNORM_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  set(CLNORM_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(CLNORM_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(CLNORM_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
# The prefix is taken at install time, so `cmake --install --prefix P` writes P.
configure_file(${PROJECT_SOURCE_DIR}/cmake/clnorm.pc.in ${PROJECT_BINARY_DIR}/clnorm.pc.in2 @ONLY)
install(CODE "
  file(READ \"${PROJECT_BINARY_DIR}/clnorm.pc.in2\" _pc)
  string(REPLACE \"%PREFIX%\" \"\${CMAKE_INSTALL_PREFIX}\" _pc \"\${_pc}\")
  file(WRITE \"${PROJECT_BINARY_DIR}/clnorm.pc\" \"\${_pc}\")
" COMPONENT development)
install(FILES ${PROJECT_BINARY_DIR}/clnorm.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT development)

# clnorm_mpi, where it is built: its libraries in an export set of their own
# (clnormMpiTargets.cmake, which clnormConfig.cmake loads only once MPI is found), its
# header, and clnorm-mpi.pc.
if(TARGET clnorm_mpi)
  install(TARGETS clnorm_mpi EXPORT clnormMpiTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
            NAMELINK_COMPONENT development
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development)
  install(TARGETS clnorm_mpi_static EXPORT clnormMpiTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development)
  install(FILES ${PROJECT_SOURCE_DIR}/include/clnorm_mpi.h
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development)
  install(EXPORT clnormMpiTargets NAMESPACE clnorm:: DESTINATION ${CLNORM_CMAKE_DIR}
          COMPONENT development)
  # MPI has no pkg-config name common to its implementations, so its flags are
  # written out as find_package(MPI) found them; the header includes <mpi.h>.
  set(CLNORM_PC_MPI_CFLAGS "")
  foreach(_dir IN LISTS MPI_C_INCLUDE_DIRS)
    string(APPEND CLNORM_PC_MPI_CFLAGS " -I${_dir}")
  endforeach()
  foreach(_opt IN LISTS MPI_C_COMPILE_OPTIONS)
    string(APPEND CLNORM_PC_MPI_CFLAGS " ${_opt}")
  endforeach()
  foreach(_def IN LISTS MPI_C_COMPILE_DEFINITIONS)
    string(APPEND CLNORM_PC_MPI_CFLAGS " -D${_def}")
  endforeach()
  set(CLNORM_PC_MPI_LIBS "")
  foreach(_flag IN LISTS MPI_C_LINK_FLAGS)
    string(APPEND CLNORM_PC_MPI_LIBS " ${_flag}")
  endforeach()
  foreach(_lib IN LISTS MPI_C_LIBRARIES)
    string(APPEND CLNORM_PC_MPI_LIBS " ${_lib}")
  endforeach()
  configure_file(${PROJECT_SOURCE_DIR}/cmake/clnorm-mpi.pc.in
                 ${PROJECT_BINARY_DIR}/clnorm-mpi.pc.in2 @ONLY)
  install(CODE "
    file(READ \"${PROJECT_BINARY_DIR}/clnorm-mpi.pc.in2\" _pc)
    string(REPLACE \"%PREFIX%\" \"\${CMAKE_INSTALL_PREFIX}\" _pc \"\${_pc}\")
    file(WRITE \"${PROJECT_BINARY_DIR}/clnorm-mpi.pc\" \"\${_pc}\")
  " COMPONENT development)
  install(FILES ${PROJECT_BINARY_DIR}/clnorm-mpi.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT development)
endif()
