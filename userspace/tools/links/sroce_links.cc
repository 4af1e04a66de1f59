// SPDX-License-Identifier: GPL-2.0
//
// sroce-links: create and remove the sroce devices listed in
// /etc/sroce/links.conf.  Run by sroce-links.service at boot and shutdown
// and by a udev rule when a netdev appears (Documentation/admin-guide.md).
// It drives the same commands an administrator would type: "ip link set
// NETDEV mtu N" and "rdma link add|delete".
#include "links_conf.h"

#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

extern char **environ;

namespace fs = std::filesystem;
using sroce::links::Link;

namespace {

constexpr const char *kDefaultConf = "/etc/sroce/links.conf";

void usage(std::ostream &o)
{
	o << "Usage: sroce-links [-c FILE] check|up|down [NETDEV]\n"
	     "  check         parse FILE (default " << kDefaultConf << "), list its devices\n"
	     "  up [NETDEV]   create the listed devices whose netdev exists and that do\n"
	     "                not exist yet (only NETDEV's with an argument); set the\n"
	     "                netdev's MTU first where mtu= is given\n"
	     "  down [NETDEV] delete the listed devices that exist\n"
	     "A missing FILE lists no devices.  Exit status: 0 done, 1 a command or\n"
	     "the file failed, 2 usage error.\n";
}

// run ARGV: the command's exit status (127: could not start it)
int run(const std::vector<std::string> &args)
{
	std::vector<char *> argv;
	for (const auto &a : args)
		argv.push_back(const_cast<char *>(a.c_str()));
	argv.push_back(nullptr);
	std::cout << "sroce-links: running";
	for (const auto &a : args)
		std::cout << ' ' << a;
	std::cout << std::endl;
	pid_t pid;
	int err = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
	if (err) {
		std::cerr << "sroce-links: cannot run " << args[0] << ": " << std::strerror(err) << '\n';
		return 127;
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return 127;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

bool device_exists(const std::string &name)
{
	return fs::exists(fs::path("/sys/class/infiniband") / name);
}

bool netdev_exists(const std::string &name)
{
	return fs::exists(fs::path("/sys/class/net") / name);
}

int up(const std::vector<Link> &links, const std::string &only)
{
	int rc = 0;
	for (const auto &l : links) {
		if (!only.empty() && l.netdev != only)
			continue;
		if (device_exists(l.name)) {
			std::cout << "sroce-links: " << l.name << " exists already\n";
			continue;
		}
		if (!netdev_exists(l.netdev)) {
			// the udev rule calls us again when it appears
			std::cout << "sroce-links: " << l.name << ": netdev " << l.netdev
				  << " is not there (yet)\n";
			continue;
		}
		if (l.mtu && run({"ip", "link", "set", "dev", l.netdev, "mtu",
				  std::to_string(*l.mtu)}) != 0) {
			rc = 1;
			continue;
		}
		if (run({"rdma", "link", "add", l.name, "type", "sroce", "netdev", l.netdev}) != 0)
			rc = 1;
	}
	return rc;
}

int down(const std::vector<Link> &links, const std::string &only)
{
	int rc = 0;
	for (const auto &l : links) {
		if ((!only.empty() && l.netdev != only) || !device_exists(l.name))
			continue;
		if (run({"rdma", "link", "delete", l.name}) != 0)
			rc = 1;
	}
	return rc;
}

}  // namespace

int main(int argc, char **argv)
{
	std::string conf = kDefaultConf;
	std::vector<std::string> args(argv + 1, argv + argc);
	if (!args.empty() && (args[0] == "-h" || args[0] == "--help")) {
		usage(std::cout);
		return 0;
	}
	if (args.size() >= 2 && args[0] == "-c") {
		conf = args[1];
		args.erase(args.begin(), args.begin() + 2);
	}
	if (args.empty() || args.size() > 2 ||
	    (args[0] != "check" && args[0] != "up" && args[0] != "down")) {
		usage(std::cerr);
		return 2;
	}
	const std::string only = args.size() == 2 ? args[1] : "";

	std::string text;
	if (fs::exists(conf)) {
		std::ifstream in(conf);
		std::stringstream ss;
		ss << in.rdbuf();
		if (!in) {
			std::cerr << "sroce-links: cannot read " << conf << '\n';
			return 1;
		}
		text = ss.str();
	}
	auto parsed = sroce::links::parse(text);
	for (const auto &e : parsed.errors)
		std::cerr << conf << ':' << e << '\n';
	if (!parsed.ok())
		return 1;

	if (args[0] == "check") {
		for (const auto &l : parsed.links) {
			std::cout << l.name << ' ' << l.netdev;
			if (l.mtu)
				std::cout << " mtu=" << *l.mtu;
			std::cout << '\n';
		}
		return 0;
	}
	return args[0] == "up" ? up(parsed.links, only) : down(parsed.links, only);
}
