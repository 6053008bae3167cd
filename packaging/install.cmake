# Install rules for feedd (included at the end of the top-level CMakeLists.txt).
#
#   cmake -B build -DCMAKE_INSTALL_PREFIX=/usr && cmake --build build
#   DESTDIR=/tmp/root cmake --install build
#
# With the /usr prefix (the Debian package's), the layout is:
#   /usr/bin/feedd, /usr/bin/feedctl
#   /etc/feedd/feedd.conf                      (a dpkg conffile; data_dir is
#                                              the unit's /var/lib/feedd)
#   /usr/lib/systemd/system/feedd.service, feedd-worker@.service
#   /usr/share/man/man8/feedd.8.gz, man1/feedctl.1.gz (packaging/man.cmake)
#   /usr/share/feedd/monitoring/...            (dashboards, Prometheus files)
#   /usr/share/doc/feedd/...                   (README, docs/, copyright,
#                                              changelog.Debian.gz)
# Any other prefix keeps everything under it (<prefix>/etc/feedd/feedd.conf),
# as GNUInstallDirs does; the unit's ExecStart names /usr/bin/feedd, so only
# the /usr layout runs under systemd as installed.
include(GNUInstallDirs)
include(${CMAKE_CURRENT_LIST_DIR}/man.cmake)

install(TARGETS feedd feedctl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# /etc for the /usr prefix (GNUInstallDirs' special case; stage it with
# DESTDIR, not --prefix), <prefix>/etc (relative, relocatable) otherwise.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(FEEDD_INSTALL_CONFDIR /etc/feedd)
else()
  set(FEEDD_INSTALL_CONFDIR ${CMAKE_INSTALL_SYSCONFDIR}/feedd)
endif()
# The /usr layout installs the configuration with the paths of the packaged
# unit: configs/feedd.conf with data_dir = /var/lib/feedd (the unit's
# StateDirectory, the only directory its sandbox lets feedd write), made at
# configure time so the two files never drift apart.
set(FEEDD_INSTALLED_CONF ${PROJECT_SOURCE_DIR}/configs/feedd.conf)
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${FEEDD_INSTALLED_CONF})
  file(READ ${FEEDD_INSTALLED_CONF} conf)
  set(source_line "data_dir = ./data\n")
  set(packaged_line "# The packaged service's state directory (feedd.service: StateDirectory=feedd).\n\
# Another directory also needs ReadWritePaths= in a drop-in (systemctl edit feedd).\n\
data_dir = /var/lib/feedd\n")
  string(FIND "${conf}" "\n${source_line}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "configs/feedd.conf has no line '${source_line}' to replace for the package")
  endif()
  string(REPLACE "\n${source_line}" "\n${packaged_line}" conf "${conf}")
  set(FEEDD_INSTALLED_CONF ${PROJECT_BINARY_DIR}/packaging/feedd.conf)
  file(WRITE ${FEEDD_INSTALLED_CONF} "${conf}")
endif()
install(FILES ${FEEDD_INSTALLED_CONF}
        DESTINATION ${FEEDD_INSTALL_CONFDIR}
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)

# lib/, not CMAKE_INSTALL_LIBDIR (lib/x86_64-linux-gnu on Debian): systemd
# reads /usr/lib/systemd/system (and /usr/local/lib/systemd/system).
install(FILES ${PROJECT_SOURCE_DIR}/configs/feedd.service
              ${PROJECT_SOURCE_DIR}/configs/feedd-worker@.service
        DESTINATION lib/systemd/system
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)

# Globbed at install time: whatever monitoring/ holds then, if it exists.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/monitoring/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/feedd/monitoring
        OPTIONAL
        FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
        DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
                              GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)

install(FILES ${FEEDD_MAN_DIR}/feedd.8.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man8
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
install(FILES ${FEEDD_MAN_DIR}/feedctl.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)

# Debian's copyright file and changelog (lintian: no-copyright-file,
# no-changelog). The changelog's entry is this version, signed by
# FEEDD_PACKAGE_MAINTAINER (packaging/CPackConfig.cmake), dated by
# SOURCE_DATE_EPOCH when set (reproducible builds), else the configure time.
set(FEEDD_PACKAGE_MAINTAINER "feedd maintainers <feedd@example.org>" CACHE STRING
    "Maintainer of the Debian package: 'Name <address>'")
set(FEEDD_DEB_RELEASE 1)  # CPACK_DEBIAN_PACKAGE_RELEASE
set(FEEDD_DEB_VERSION ${PROJECT_VERSION}-${FEEDD_DEB_RELEASE})
string(TIMESTAMP FEEDD_CHANGELOG_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
configure_file(${CMAKE_CURRENT_LIST_DIR}/debian/changelog.in
               ${PROJECT_BINARY_DIR}/packaging/changelog.Debian @ONLY)
add_custom_command(
  OUTPUT ${PROJECT_BINARY_DIR}/packaging/changelog.Debian.gz
  COMMAND ${GZIP_EXECUTABLE} -9nkf ${PROJECT_BINARY_DIR}/packaging/changelog.Debian
  DEPENDS ${PROJECT_BINARY_DIR}/packaging/changelog.Debian
  VERBATIM)
add_custom_target(debian_changelog ALL DEPENDS ${PROJECT_BINARY_DIR}/packaging/changelog.Debian.gz)
install(FILES ${CMAKE_CURRENT_LIST_DIR}/debian/copyright
              ${PROJECT_BINARY_DIR}/packaging/changelog.Debian.gz
        DESTINATION ${CMAKE_INSTALL_DOCDIR}
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)

install(FILES ${CMAKE_CURRENT_LIST_DIR}/debian/lintian-overrides
        DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides
        RENAME feedd
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)

install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/
        DESTINATION ${CMAKE_INSTALL_DOCDIR}
        FILES_MATCHING PATTERN "*.md")
