# Man pages feedd(8) and feedctl(1), generated at build time by help2man
# from the programs' own --help and --version (the same text, so the pages
# cannot disagree with the programs), compressed as Debian wants them
# (gzip -9n: no name or time stamp). Included by packaging/install.cmake.
find_program(HELP2MAN_EXECUTABLE help2man REQUIRED)  # scripts/install-deps.sh
find_program(GZIP_EXECUTABLE gzip REQUIRED)

set(FEEDD_MAN_DIR ${PROJECT_BINARY_DIR}/man)
set(FEEDD_MAN_PAGES)
# feedd_man_page(TARGET SECTION NAME-LINE)
function(feedd_man_page target section description)
  set(page ${FEEDD_MAN_DIR}/${target}.${section})
  add_custom_command(
    OUTPUT ${page}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${FEEDD_MAN_DIR}
    COMMAND ${HELP2MAN_EXECUTABLE} --no-info --section=${section} --name=${description}
            --output=${page} $<TARGET_FILE:${target}>
    COMMAND ${GZIP_EXECUTABLE} -9nf ${page}
    DEPENDS ${target}
    COMMENT "Generating the man page ${target}(${section})"
    VERBATIM)
  set(FEEDD_MAN_PAGES ${FEEDD_MAN_PAGES} ${page}.gz PARENT_SCOPE)
endfunction()

feedd_man_page(feedd 8 "change-feed document store daemon")
feedd_man_page(feedctl 1 "inspect and control the processors of a running feedd")
add_custom_target(man_pages ALL DEPENDS ${FEEDD_MAN_PAGES})
