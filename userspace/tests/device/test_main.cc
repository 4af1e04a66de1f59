// main() of the device tests.  The guests run every case in one process
// (selftests/lib/ktap.sh), so each case writes its name to the kernel log as
// it starts: a kernel message can then be tied to the case that caused it.
// Where /dev/kmsg cannot be opened (not root), nothing is written.

#include <gtest/gtest.h>

#include <fstream>
#include <memory>

namespace {

class KmsgCaseMarker : public testing::EmptyTestEventListener {
	void OnTestStart(const testing::TestInfo &info) override
	{
		std::ofstream kmsg("/dev/kmsg");

		if (kmsg)
			kmsg << "sroce-selftest: begin " << info.test_suite_name()
			     << '.' << info.name() << std::endl;
	}
};

} // namespace

int main(int argc, char **argv)
{
	testing::InitGoogleTest(&argc, argv);
	// The listener list takes ownership of what it is given.
	testing::UnitTest::GetInstance()->listeners().Append(
		std::make_unique<KmsgCaseMarker>().release());
	return RUN_ALL_TESTS();
}
