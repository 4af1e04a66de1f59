// sroce_mpi_check: an MPI program for selftests/middleware.sh, started by
// mpirun with two ranks, one in each guest.
//
//   mpirun -np 2 ... sroce_mpi_check
//	1. Ping-pong between rank 0 and rank 1 at 8 B, 4 KiB, 64 KiB (10
//	   round trips each) and 1 MiB (3: TCG guests move a few MB/s):
//	   rank 0 sends a buffer whose bytes
//	   depend on the size, the round and the position; rank 1 checks every
//	   byte, writes its answer (each byte complemented) into a buffer of
//	   its own and sends that back; rank 0 checks every byte of the answer.
//	   Prints one line per size with the mean round-trip time.
//	2. MPI_Allreduce of 131072 64-bit integers (1 MiB) with MPI_SUM and of
//	   the same vector with MPI_MAX; every rank checks every element of
//	   both results against what it computes for the whole communicator.
//	Each rank first prints "rank R of N on HOST role ROLE" (ROLE: the
//	SROCE_ROLE of the guest it runs in), so the caller can see that the
//	two ranks ran in different guests.
//
// Exit status 0 if every check passed, 1 otherwise (MPI_Abort on the first
// mismatch, with what differed), 2 for a usage error (not two ranks).
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

constexpr int kTagPing = 1;
constexpr int kTagPong = 2;
constexpr std::size_t kReduceCount = 131072;

// The byte rank 0 sends at position i of a message of SIZE in ROUND.
std::uint8_t ping_byte(std::size_t size, int round, std::size_t i)
{
	return static_cast<std::uint8_t>(i * 31 + size * 7 + round * 13 + (i >> 8));
}

[[noreturn]] void abort_with(const std::string &what)
{
	std::fprintf(stderr, "sroce_mpi_check: %s\n", what.c_str());
	std::fflush(stderr);
	MPI_Abort(MPI_COMM_WORLD, 1);
	std::exit(1);
}

void check_ok(int rc, const char *call)
{
	if (rc != MPI_SUCCESS)
		abort_with(std::string(call) + " failed with error " + std::to_string(rc));
}

// The first position where BUF differs from what the ping (answer: its
// complement) of SIZE in ROUND carries, or SIZE if none does.
std::size_t first_mismatch(const std::vector<std::uint8_t> &buf, std::size_t size,
			   int round, bool answer)
{
	for (std::size_t i = 0; i < size; i++) {
		std::uint8_t want = ping_byte(size, round, i);

		if (answer)
			want = static_cast<std::uint8_t>(~want);
		if (buf[i] != want)
			return i;
	}
	return size;
}

void pingpong(int rank, std::size_t size)
{
	const int rounds = size >= (std::size_t{1} << 20) ? 3 : 10;
	std::vector<std::uint8_t> out(size), in(size);
	const int count = static_cast<int>(size);
	double t0 = MPI_Wtime();

	for (int round = 0; round < rounds; round++) {
		std::size_t bad;

		if (rank == 0) {
			for (std::size_t i = 0; i < size; i++)
				out[i] = ping_byte(size, round, i);
			check_ok(MPI_Send(out.data(), count, MPI_BYTE, 1, kTagPing,
					  MPI_COMM_WORLD), "MPI_Send");
			check_ok(MPI_Recv(in.data(), count, MPI_BYTE, 1, kTagPong,
					  MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
			bad = first_mismatch(in, size, round, true);
		} else {
			check_ok(MPI_Recv(in.data(), count, MPI_BYTE, 0, kTagPing,
					  MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
			bad = first_mismatch(in, size, round, false);
			for (std::size_t i = 0; i < size; i++)
				out[i] = static_cast<std::uint8_t>(~in[i]);
		}
		if (bad != size)
			abort_with("rank " + std::to_string(rank) + ": " + std::to_string(size) +
				   "-byte message of round " + std::to_string(round) +
				   " differs at byte " + std::to_string(bad));
		if (rank == 1)
			check_ok(MPI_Send(out.data(), count, MPI_BYTE, 0, kTagPong,
					  MPI_COMM_WORLD), "MPI_Send");
	}
	if (rank == 0)
		std::printf("pingpong %zu bytes: %d round trips checked, %.1f us each\n", size,
			    rounds, (MPI_Wtime() - t0) * 1e6 / rounds);
}

std::int64_t reduce_element(int rank, std::size_t i)
{
	return static_cast<std::int64_t>(i) * (rank + 1) - 1000 * rank;
}

void allreduce(int rank, int ranks)
{
	std::vector<std::int64_t> mine(kReduceCount), sum(kReduceCount), max(kReduceCount);
	const int count = static_cast<int>(kReduceCount);

	for (std::size_t i = 0; i < kReduceCount; i++)
		mine[i] = reduce_element(rank, i);
	check_ok(MPI_Allreduce(mine.data(), sum.data(), count, MPI_INT64_T, MPI_SUM,
			       MPI_COMM_WORLD), "MPI_Allreduce(SUM)");
	check_ok(MPI_Allreduce(mine.data(), max.data(), count, MPI_INT64_T, MPI_MAX,
			       MPI_COMM_WORLD), "MPI_Allreduce(MAX)");
	for (std::size_t i = 0; i < kReduceCount; i++) {
		std::int64_t want_sum = 0, want_max = reduce_element(0, i);

		for (int r = 0; r < ranks; r++) {
			want_sum += reduce_element(r, i);
			if (reduce_element(r, i) > want_max)
				want_max = reduce_element(r, i);
		}
		if (sum[i] != want_sum || max[i] != want_max)
			abort_with("rank " + std::to_string(rank) + ": allreduce element " +
				   std::to_string(i) + " is sum " + std::to_string(sum[i]) +
				   " max " + std::to_string(max[i]) + ", expected " +
				   std::to_string(want_sum) + " and " + std::to_string(want_max));
	}
	std::printf("rank %d: allreduce of %zu int64 (sum, max) checked\n", rank, kReduceCount);
}

} // namespace

int main(int argc, char **argv)
{
	int rank = 0, ranks = 0, len = 0;
	char host[MPI_MAX_PROCESSOR_NAME] = {};
	const char *role = std::getenv("SROCE_ROLE");

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &ranks);
	MPI_Get_processor_name(host, &len);
	std::printf("rank %d of %d on %s role %s\n", rank, ranks, host, role ? role : "none");
	std::fflush(stdout);
	if (ranks != 2) {
		if (rank == 0)
			std::fprintf(stderr, "sroce_mpi_check: needs 2 ranks, got %d\n", ranks);
		MPI_Finalize();
		return 2;
	}
	for (std::size_t size : {std::size_t{8}, std::size_t{4096}, std::size_t{65536},
				 std::size_t{1} << 20})
		pingpong(rank, size);
	allreduce(rank, ranks);
	MPI_Barrier(MPI_COMM_WORLD);
	std::fflush(stdout);
	MPI_Finalize();
	return 0;
}
