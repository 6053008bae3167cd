# Unit tests of daemon/ (included from tests/unit/CMakeLists.txt).
add_executable(options_test ${CMAKE_CURRENT_LIST_DIR}/options_test.cc)
# feedd_processors directly: its kinds register from static initializers.
# FEEDD_SOURCE_DIR: the test compares the built-in configuration with
# configs/feedd.conf.
target_link_libraries(options_test PRIVATE feedd_daemon feedd_processors GTest::gtest_main)
target_compile_definitions(options_test PRIVATE FEEDD_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
gtest_discover_tests(options_test
  PROPERTIES LABELS unit
  DISCOVERY_TIMEOUT 60)

add_executable(host_port_test ${CMAKE_CURRENT_LIST_DIR}/host_port_test.cc)
target_link_libraries(host_port_test PRIVATE feedd_daemon GTest::gtest_main)
gtest_discover_tests(host_port_test
  PROPERTIES LABELS unit
  DISCOVERY_TIMEOUT 60)

add_executable(query_executor_test ${CMAKE_CURRENT_LIST_DIR}/query_executor_test.cc)
target_link_libraries(query_executor_test PRIVATE feedd_daemon GTest::gtest_main)
gtest_discover_tests(query_executor_test
  PROPERTIES LABELS unit
  DISCOVERY_TIMEOUT 60)

add_executable(auth_tokens_test ${CMAKE_CURRENT_LIST_DIR}/auth_tokens_test.cc)
target_link_libraries(auth_tokens_test PRIVATE feedd_daemon GTest::gtest_main)
gtest_discover_tests(auth_tokens_test
  PROPERTIES LABELS unit
  DISCOVERY_TIMEOUT 60)

add_executable(client_token_test ${CMAKE_CURRENT_LIST_DIR}/client_token_test.cc)
target_link_libraries(client_token_test PRIVATE feedd_util GTest::gtest_main)
gtest_discover_tests(client_token_test
  PROPERTIES LABELS unit
  DISCOVERY_TIMEOUT 60)

add_executable(ndjson_lines_test ${CMAKE_CURRENT_LIST_DIR}/ndjson_lines_test.cc)
target_link_libraries(ndjson_lines_test PRIVATE feedd_http_api GTest::gtest_main)
gtest_discover_tests(ndjson_lines_test
  PROPERTIES LABELS unit
  DISCOVERY_TIMEOUT 60)

add_executable(http_client_stream_test ${CMAKE_CURRENT_LIST_DIR}/http_client_stream_test.cc)
target_link_libraries(http_client_stream_test PRIVATE feedd_daemon GTest::gtest_main)
gtest_discover_tests(http_client_stream_test
  PROPERTIES LABELS unit
  DISCOVERY_TIMEOUT 60)

add_executable(http_server_threads_test ${CMAKE_CURRENT_LIST_DIR}/http_server_threads_test.cc)
target_link_libraries(http_server_threads_test PRIVATE feedd_daemon GTest::gtest_main)
gtest_discover_tests(http_server_threads_test
  PROPERTIES LABELS unit
  DISCOVERY_TIMEOUT 60)

add_executable(import_job_test ${CMAKE_CURRENT_LIST_DIR}/import_job_test.cc)
target_link_libraries(import_job_test PRIVATE feedd_daemon GTest::gtest_main)
gtest_discover_tests(import_job_test
  PROPERTIES LABELS unit
  DISCOVERY_TIMEOUT 60)

add_executable(reset_params_test ${CMAKE_CURRENT_LIST_DIR}/reset_params_test.cc)
target_link_libraries(reset_params_test PRIVATE feedd_http_api GTest::gtest_main)
gtest_discover_tests(reset_params_test
  PROPERTIES LABELS unit
  DISCOVERY_TIMEOUT 60)

add_executable(auth_handler_test ${CMAKE_CURRENT_LIST_DIR}/auth_handler_test.cc)
target_link_libraries(auth_handler_test PRIVATE feedd_daemon GTest::gtest_main)
gtest_discover_tests(auth_handler_test
  PROPERTIES LABELS unit
  DISCOVERY_TIMEOUT 60)

add_executable(route_match_test ${CMAKE_CURRENT_LIST_DIR}/route_match_test.cc)
target_link_libraries(route_match_test PRIVATE feedd_daemon GTest::gtest_main)
gtest_discover_tests(route_match_test
  PROPERTIES LABELS unit
  DISCOVERY_TIMEOUT 60)
