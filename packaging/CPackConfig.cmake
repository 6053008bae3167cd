# CPack: the Debian package of feedd (included at the end of the top-level
# CMakeLists.txt, after packaging/install.cmake). docs/packaging.md.
#
#   cmake -B build-pkg -DCMAKE_INSTALL_PREFIX=/usr -DFEEDD_BUILD_BENCH=OFF
#   cmake --build build-pkg -j2 --target feedd feedctl
#   (cd build-pkg && cpack -G DEB)        # -> feedd_<version>-1_<arch>.deb
#
# Dependencies are computed by dpkg-shlibdeps (package dpkg-dev) from the
# binaries. The maintainer scripts are in packaging/debian/.
set(CPACK_PACKAGE_NAME feedd)
set(CPACK_PACKAGE_VENDOR "feedd")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# FEEDD_PACKAGE_MAINTAINER (packaging/install.cmake): set it to your address
# when you distribute the package (-DFEEDD_PACKAGE_MAINTAINER="Name <addr>").
set(CPACK_PACKAGE_CONTACT "${FEEDD_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "document store with a durable change feed")
set(CPACK_PACKAGE_DESCRIPTION
  "feedd stores JSON items in containers over HTTP and appends every mutation,\n\
atomically with the item, to an LSN-ordered change feed that it publishes to\n\
Kafka and feeds to materialized-view processors. This package ships the\n\
daemon, the feedctl tool, a sandboxed systemd unit, the default\n\
configuration and the monitoring assets (Grafana dashboard, Prometheus files).")
set(CPACK_GENERATOR DEB)
set(CPACK_STRIP_FILES ON)
# The package's layout is the /usr one (packaging/install.cmake).
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_SOURCE_IGNORE_FILES "/build[^/]*/" "/\\\\.git/")

set(CPACK_DEBIAN_PACKAGE_NAME feedd)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${FEEDD_DEB_RELEASE})  # packaging/install.cmake
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CPACK_PACKAGE_CONTACT}")
set(CPACK_DEBIAN_PACKAGE_SECTION database)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)
# The maintainer scripts use deb-systemd-helper and deb-systemd-invoke
# (init-system-helpers, essential) and reach systemd only when it runs.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "systemd, prometheus, grafana")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${CMAKE_CURRENT_LIST_DIR}/debian/conffiles
  ${CMAKE_CURRENT_LIST_DIR}/debian/postinst
  ${CMAKE_CURRENT_LIST_DIR}/debian/prerm
  ${CMAKE_CURRENT_LIST_DIR}/debian/postrm)
# Maintainer scripts 0755, conffiles 0644, whatever the checkout's modes.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  message(STATUS "feedd: CMAKE_INSTALL_PREFIX is ${CMAKE_INSTALL_PREFIX}; the .deb "
                 "needs -DCMAKE_INSTALL_PREFIX=/usr (for /etc/feedd/feedd.conf)")
endif()

include(CPack)
