# Install rules for feedd (included at the end of the top-level CMakeLists.txt).
#
#   cmake -B build -DCMAKE_INSTALL_PREFIX=/usr && cmake --build build
#   DESTDIR=/tmp/root cmake --install build
#
# With the /usr prefix (the Debian package's), the layout is:
#   /usr/bin/feedd, /usr/bin/feedctl
#   /etc/feedd/feedd.conf                      (a dpkg conffile)
#   /usr/lib/systemd/system/feedd.service, feedd-worker@.service
#   /usr/share/feedd/monitoring/...            (dashboards, Prometheus files)
#   /usr/share/doc/feedd/...                   (README and docs/)
# Any other prefix keeps everything under it (<prefix>/etc/feedd/feedd.conf),
# as GNUInstallDirs does; the unit's ExecStart names /usr/bin/feedd, so only
# the /usr layout runs under systemd as installed.
include(GNUInstallDirs)

install(TARGETS feedd feedctl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# /etc for the /usr prefix (GNUInstallDirs' special case; stage it with
# DESTDIR, not --prefix), <prefix>/etc (relative, relocatable) otherwise.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(FEEDD_INSTALL_CONFDIR /etc/feedd)
else()
  set(FEEDD_INSTALL_CONFDIR ${CMAKE_INSTALL_SYSCONFDIR}/feedd)
endif()
install(FILES ${PROJECT_SOURCE_DIR}/configs/feedd.conf
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

install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/
        DESTINATION ${CMAKE_INSTALL_DOCDIR}
        FILES_MATCHING PATTERN "*.md")
