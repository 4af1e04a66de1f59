# Tests of the libibverbs provider (userspace/provider).  Meant to be
# include()d from userspace/tests/CMakeLists.txt after enable_testing(); needs
# the sroce_provider target and PkgConfig::IBVERBS from ../provider.
#
# Both executables dlopen() the built provider named by SROCE_PROVIDER_PATH,
# so they depend on the target explicitly.

find_package(GTest REQUIRED)
include(GoogleTest)

set(SROCE_PROVIDER_TEST_DIR "${CMAKE_CURRENT_LIST_DIR}")

function(sroce_provider_test name)
	add_executable(${name} ${ARGN})
	target_compile_options(${name} PRIVATE -Wall -Wextra -Werror)
	target_compile_definitions(${name} PRIVATE
		SROCE_PROVIDER_PATH="$<TARGET_FILE:sroce_provider>")
	target_link_libraries(${name} PRIVATE
		GTest::gtest_main ${CMAKE_DL_LIBS})
	add_dependencies(${name} sroce_provider)
	gtest_discover_tests(${name})
	sroce_host_only(${name})
endfunction()

# File name, RTLD_NOW resolution, exports and imported version nodes.
sroce_provider_test(sroce_provider_elf_test
	"${SROCE_PROVIDER_TEST_DIR}/provider_elf_test.cc")

# Registration and ops against libibverbs and a fake uverbs kernel.  The
# executable exports its symbols so that its verbs_register_driver_34,
# write(), ioctl(), mmap() and munmap() take precedence over libibverbs' and
# libc's for the provider and libibverbs.
sroce_provider_test(sroce_provider_uverbs_test
	"${SROCE_PROVIDER_TEST_DIR}/provider_uverbs_fake.cc"
	"${SROCE_PROVIDER_TEST_DIR}/provider_uverbs_test.cc"
	"${SROCE_PROVIDER_TEST_DIR}/provider_qp_send_test.cc"
	"${SROCE_PROVIDER_TEST_DIR}/provider_qp_recv_test.cc"
	"${SROCE_PROVIDER_TEST_DIR}/provider_qp_destroy_test.cc"
	"${SROCE_PROVIDER_TEST_DIR}/provider_srq_test.cc"
	"${SROCE_PROVIDER_TEST_DIR}/provider_qp_ex_test.cc"
	"${SROCE_PROVIDER_TEST_DIR}/provider_pdomain_test.cc"
	"${SROCE_PROVIDER_TEST_DIR}/provider_xrc_test.cc"
	"${SROCE_PROVIDER_TEST_DIR}/provider_import_test.cc")
set_target_properties(sroce_provider_uverbs_test PROPERTIES
	ENABLE_EXPORTS ON)
target_include_directories(sroce_provider_uverbs_test PRIVATE
	"${SROCE_TOP}/userspace/provider"
	"${SROCE_UAPI_DIR}")
target_link_libraries(sroce_provider_uverbs_test PRIVATE PkgConfig::IBVERBS)
sroce_gtest_pch(sroce_provider_uverbs_test)
