// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// Static properties of the built provider, libsroce-rdmav34.so, that decide
// whether libibverbs 44 can load it at all: the file name, that it resolves
// completely with RTLD_NOW (what libibverbs uses), that it exports nothing,
// and that everything it takes from libibverbs is bound to the PABI 34 or
// public IBVERBS_1.x version nodes.  The ELF tables are read directly so the
// test needs no binutils.

#include <dlfcn.h>
#include <elf.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#ifndef SROCE_PROVIDER_PATH
#error "SROCE_PROVIDER_PATH must name the built libsroce-rdmav34.so"
#endif

namespace {

constexpr const char *kProviderPath = SROCE_PROVIDER_PATH;
constexpr const char *kLibibverbs = "libibverbs.so.1";
constexpr const char *kPrivateNode = "IBVERBS_PRIVATE_34";

// A dynamic symbol as the loader sees it.
struct DynSymbol {
	std::string name;
	bool defined;
	std::string version;	// empty: unversioned / base
};

// Just enough of an ELF64 reader for the dynamic tables of one file.
class ElfFile {
public:
	explicit ElfFile(const std::string &path)
	{
		std::ifstream in(path, std::ios::binary);
		bytes_.assign(std::istreambuf_iterator<char>(in), {});
	}

	bool valid() const
	{
		return bytes_.size() >= sizeof(Elf64_Ehdr) &&
		       std::memcmp(bytes_.data(), ELFMAG, SELFMAG) == 0 &&
		       bytes_[EI_CLASS] == ELFCLASS64;
	}

	std::vector<DynSymbol> dynamic_symbols() const
	{
		std::vector<DynSymbol> out;
		const auto dynsym = section(SHT_DYNSYM);
		const auto versym = section(SHT_GNU_versym);
		if (!dynsym)
			return out;
		const auto versions = needed_versions();
		const size_t count = dynsym->sh_size / sizeof(Elf64_Sym);

		for (size_t i = 1; i < count; i++) {
			const auto sym = read<Elf64_Sym>(dynsym->sh_offset +
							 i * sizeof(Elf64_Sym));
			DynSymbol ds;
			ds.name = string_at(dynsym->sh_link, sym.st_name);
			ds.defined = sym.st_shndx != SHN_UNDEF;
			if (versym) {
				const auto idx = read<Elf64_Half>(
					versym->sh_offset +
					i * sizeof(Elf64_Half)) & 0x7fff;
				const auto it = versions.find(idx);
				if (it != versions.end())
					ds.version = it->second.second;
			}
			out.push_back(ds);
		}
		return out;
	}

	// version index -> (file the version is needed from, version name)
	std::map<Elf64_Half, std::pair<std::string, std::string>>
	needed_versions() const
	{
		std::map<Elf64_Half, std::pair<std::string, std::string>> out;
		const auto sec = section(SHT_GNU_verneed);
		if (!sec)
			return out;
		Elf64_Off off = sec->sh_offset;

		for (size_t n = 0; n < sec->sh_info; n++) {
			const auto need = read<Elf64_Verneed>(off);
			const auto file = string_at(sec->sh_link,
						    need.vn_file);
			Elf64_Off aoff = off + need.vn_aux;

			for (size_t a = 0; a < need.vn_cnt; a++) {
				const auto aux = read<Elf64_Vernaux>(aoff);
				out[aux.vna_other] = {
					file, string_at(sec->sh_link,
							aux.vna_name) };
				aoff += aux.vna_next;
			}
			off += need.vn_next;
		}
		return out;
	}

	// Values of all dynamic-section entries with the given tag, as strings
	// when the tag names a string (DT_NEEDED, DT_SONAME).
	std::vector<std::string> dynamic_strings(Elf64_Sxword tag) const
	{
		std::vector<std::string> out;
		const auto sec = section(SHT_DYNAMIC);
		if (!sec)
			return out;
		const size_t count = sec->sh_size / sizeof(Elf64_Dyn);

		for (size_t i = 0; i < count; i++) {
			const auto dyn = read<Elf64_Dyn>(sec->sh_offset +
							 i * sizeof(Elf64_Dyn));
			if (dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag == tag)
				out.push_back(string_at(sec->sh_link,
							dyn.d_un.d_val));
		}
		return out;
	}

private:
	template <typename T> T read(size_t off) const
	{
		T value{};
		if (off > bytes_.size() || bytes_.size() - off < sizeof(T))
			throw std::out_of_range("ELF read past end of file");
		std::memcpy(&value, bytes_.data() + off, sizeof(T));
		return value;
	}

	Elf64_Shdr section_header(size_t index) const
	{
		const auto eh = read<Elf64_Ehdr>(0);
		return read<Elf64_Shdr>(eh.e_shoff + index * eh.e_shentsize);
	}

	std::optional<Elf64_Shdr> section(Elf64_Word type) const
	{
		const auto eh = read<Elf64_Ehdr>(0);
		for (size_t i = 0; i < eh.e_shnum; i++) {
			const auto sh = section_header(i);
			if (sh.sh_type == type)
				return sh;
		}
		return std::nullopt;
	}

	std::string string_at(size_t strtab_index, size_t off) const
	{
		const auto strtab = section_header(strtab_index);
		std::string s;
		for (size_t i = strtab.sh_offset + off;; i++) {
			const char c = read<char>(i);
			if (!c)
				return s;
			s.push_back(c);
		}
	}

	std::vector<unsigned char> bytes_;
};

class ProviderElf : public ::testing::Test {
protected:
	void SetUp() override { ASSERT_TRUE(elf_.valid()) << kProviderPath; }

	ElfFile elf_{ kProviderPath };
};

TEST(ProviderFile, NamedForLibibverbsPabi34)
{
	// libibverbs opens lib<name>-rdmav34.so; any other name never loads.
	EXPECT_EQ(std::filesystem::path(kProviderPath).filename(),
		  "libsroce-rdmav34.so");
}

TEST(ProviderFile, ResolvesCompletelyWithRtldNow)
{
	// As libibverbs does.  The handle is never closed: the constructor
	// has registered the provider with libibverbs, which cannot forget
	// it, so unloading would leave it pointing into unmapped memory.
	static void *const handle = dlopen(kProviderPath, RTLD_NOW);

	ASSERT_NE(handle, nullptr) << dlerror();
}

TEST_F(ProviderElf, ExportsNoSymbols)
{
	std::vector<std::string> exported;

	for (const auto &sym : elf_.dynamic_symbols())
		if (sym.defined)
			exported.push_back(sym.name);
	EXPECT_TRUE(exported.empty())
		<< "first exported symbol: " << exported.front();
}

TEST_F(ProviderElf, NeedsOnlyPabi34AndPublicLibibverbsVersions)
{
	std::set<std::string> from_libibverbs;

	for (const auto &[idx, need] : elf_.needed_versions())
		if (need.first == kLibibverbs)
			from_libibverbs.insert(need.second);

	EXPECT_EQ(from_libibverbs.count(kPrivateNode), 1u);
	for (const auto &version : from_libibverbs)
		EXPECT_TRUE(version == kPrivateNode ||
			    version.rfind("IBVERBS_1.", 0) == 0)
			<< "unexpected libibverbs version node " << version;
}

TEST_F(ProviderElf, RegistersThroughThePabi34EntryPoint)
{
	bool found = false;

	for (const auto &sym : elf_.dynamic_symbols()) {
		if (sym.name != "verbs_register_driver_34")
			continue;
		found = true;
		EXPECT_FALSE(sym.defined);
		EXPECT_EQ(sym.version, kPrivateNode);
	}
	EXPECT_TRUE(found);
}

TEST_F(ProviderElf, IsAPluginWithoutSoname)
{
	const auto needed = elf_.dynamic_strings(DT_NEEDED);

	EXPECT_TRUE(elf_.dynamic_strings(DT_SONAME).empty());
	EXPECT_NE(std::find(needed.begin(), needed.end(), kLibibverbs),
		  needed.end());
}

} // namespace
