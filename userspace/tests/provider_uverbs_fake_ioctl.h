// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// The ioctl() half of the fake uverbs kernel (provider_uverbs_fake.h): the
// RDMA_VERBS_IOCTL methods of the import verbs, which have no write()
// encoding.  A test that wants them makes a FakeUverbsIoctl next to its
// FakeUverbs; the interposed ioctl() (provider_uverbs_fake.cc) then brings
// it every ioctl on the fake's descriptor, and without one they fail with
// ENOTTY, /dev/null's answer.
//
// It answers, as ib_core's uverbs_ioctl.c and the handlers do:
//  - ib_core's UVERBS_METHOD_QUERY_CONTEXT, with sroce's mandatory
//    SROCE_ATTR_QUERY_CONTEXT_RESP (the GET_CONTEXT tail, zeroed past its
//    end as uverbs_copy_to_struct_or_zero() does; kernel/verbs.c);
//  - sroce's SROCE_METHOD_PD_QUERY (the pdn of a PD handle);
//  - ib_core's UVERBS_METHOD_QUERY_MR (keys and length of an MR handle).
// The header is checked (length, reserved fields: EPROTONOSUPPORT, driver
// id: EINVAL); a method it does not have fails with EPROTONOSUPPORT, after
// which libibverbs falls back to write() for that command, and so does
// each of its attributes that is unknown and mandatory; a duplicate
// attribute, a missing mandatory one, an out buffer of a size the method
// does not take or a handle attribute with a length fail with EINVAL.  The
// fake's ucontext holds one object of each type at FakeUverbs' handles: an
// unknown handle fails with ENOENT, one of another type with EINVAL
// (rdma_core.c).  Outputs are copied up to the caller's length, and
// UVERBS_ATTR_F_VALID_OUTPUT is set in the caller's attribute.
#ifndef SROCE_TEST_PROVIDER_UVERBS_FAKE_IOCTL_H
#define SROCE_TEST_PROVIDER_UVERBS_FAKE_IOCTL_H

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include "provider_uverbs_fake.h"

namespace sroce_provider_test {

class FakeUverbsIoctl;
inline FakeUverbsIoctl *active_ioctl;

// One ioctl as the fake kernel received it (its attributes as sent).
struct Ioctl {
	uint16_t object_id, method_id;
	uint32_t driver_id;
	std::vector<ib_uverbs_attr> attrs;

	// The attribute attr_id, or nullptr.
	const ib_uverbs_attr *attr(uint16_t attr_id) const
	{
		for (const auto &a : attrs)
			if (a.attr_id == attr_id)
				return &a;
		return nullptr;
	}
};

class FakeUverbsIoctl {
public:
	// QUERY_CONTEXT's answer besides sroce's tail (whose values are
	// FakeUverbs' abi_version and context_inline).
	uint32_t num_comp_vectors = 3;
	uint64_t core_support = IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS;
	// QUERY_MR's answer for the MR at FakeUverbs::kMrHandle.
	uint32_t mr_lkey = 0x00c0ffee;
	uint32_t mr_rkey = 0x00decade;
	uint64_t mr_length = 0x12345;
	// If set, every method fails with it before its attributes are
	// looked at, as for a device gone from under its file (EIO).
	int fail_errno = 0;

	std::vector<Ioctl> log;

	explicit FakeUverbsIoctl(FakeUverbs &kernel) : kernel_(kernel)
	{
		active_ioctl = this;
	}
	~FakeUverbsIoctl() { active_ioctl = nullptr; }
	FakeUverbsIoctl(const FakeUverbsIoctl &) = delete;
	FakeUverbsIoctl &operator=(const FakeUverbsIoctl &) = delete;

	// The calls of one method, in order.
	std::vector<const Ioctl *> calls(uint16_t object_id,
					 uint16_t method_id) const
	{
		std::vector<const Ioctl *> out;

		for (const auto &c : log)
			if (c.object_id == object_id &&
			    c.method_id == method_id)
				out.push_back(&c);
		return out;
	}

	// ioctl(fd, request, arg) on the fake's descriptor: 0, or -1 and
	// errno.
	int handle(unsigned long request, void *arg)
	{
		if (request != RDMA_VERBS_IOCTL)
			return fail(ENOTTY);
		auto *hdr = static_cast<ib_uverbs_ioctl_hdr *>(arg);
		const size_t len = sizeof(*hdr) +
				   hdr->num_attrs * sizeof(ib_uverbs_attr);
		if (hdr->length != len)
			return fail(EINVAL);
		log.push_back({ hdr->object_id, hdr->method_id, hdr->driver_id,
				{ hdr->attrs, hdr->attrs + hdr->num_attrs } });

		if (hdr->reserved1 || hdr->reserved2)
			return fail(EPROTONOSUPPORT);
		if (hdr->driver_id != SROCE_DRIVER_ID)
			return fail(EINVAL);
		const Method *m = method(hdr->object_id, hdr->method_id);
		if (!m)
			return fail(EPROTONOSUPPORT);
		if (fail_errno)
			return fail(fail_errno);
		Bundle b;
		if (const int err = bundle(*m, hdr, b))
			return fail(err);
		if (const int err = (this->*m->handler)(b))
			return fail(err);
		return 0;
	}

private:
	enum class Kind { Idr, Out };

	// An attribute a method takes: an object handle of obj_type, or an
	// out buffer of min_len to max_len bytes.
	struct Spec {
		uint16_t id;
		Kind kind;
		bool mandatory;
		uint16_t obj_type;
		uint16_t min_len, max_len;
	};

	// The caller's attributes of one call, by id.
	using Bundle = std::map<uint16_t, ib_uverbs_attr *>;

	struct Method {
		uint16_t object_id, method_id;
		std::vector<Spec> attrs;
		int (FakeUverbsIoctl::*handler)(Bundle &);
	};

	static int fail(int err)
	{
		errno = err;
		return -1;
	}

	static const Method *method(uint16_t object_id, uint16_t method_id)
	{
		static const std::vector<Method> methods = {
			{ UVERBS_OBJECT_DEVICE,
			  UVERBS_METHOD_QUERY_CONTEXT,
			  { { UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS,
			      Kind::Out, false, 0, 4, 4 },
			    { UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT, Kind::Out,
			      false, 0, 8, 8 },
			    { SROCE_ATTR_QUERY_CONTEXT_RESP, Kind::Out, true, 0,
			      sizeof(sroce_alloc_ucontext_resp), UINT16_MAX } },
			  &FakeUverbsIoctl::query_context },
			{ UVERBS_OBJECT_PD,
			  SROCE_METHOD_PD_QUERY,
			  { { SROCE_ATTR_QUERY_PD_HANDLE, Kind::Idr, true,
			      UVERBS_OBJECT_PD, 0, 0 },
			    { SROCE_ATTR_QUERY_PD_RESP_PDN, Kind::Out, true, 0,
			      4, 4 } },
			  &FakeUverbsIoctl::pd_query },
			{ UVERBS_OBJECT_MR,
			  UVERBS_METHOD_QUERY_MR,
			  { { UVERBS_ATTR_QUERY_MR_HANDLE, Kind::Idr, true,
			      UVERBS_OBJECT_MR, 0, 0 },
			    { UVERBS_ATTR_QUERY_MR_RESP_LKEY, Kind::Out, true,
			      0, 4, 4 },
			    { UVERBS_ATTR_QUERY_MR_RESP_RKEY, Kind::Out, true,
			      0, 4, 4 },
			    { UVERBS_ATTR_QUERY_MR_RESP_LENGTH, Kind::Out, true,
			      0, 8, 8 },
			    { UVERBS_ATTR_QUERY_MR_RESP_IOVA, Kind::Out, false,
			      0, 8, 8 } },
			  &FakeUverbsIoctl::query_mr },
		};

		for (const auto &m : methods)
			if (m.object_id == object_id &&
			    m.method_id == method_id)
				return &m;
		return nullptr;
	}

	// The object type of a handle of the fake's ucontext, or -1.
	static int type_of(uint64_t handle)
	{
		static const std::map<uint64_t, uint16_t> objects = {
			{ FakeUverbs::kPdHandle, UVERBS_OBJECT_PD },
			{ FakeUverbs::kMrHandle, UVERBS_OBJECT_MR },
			{ FakeUverbs::kCqHandle, UVERBS_OBJECT_CQ },
			{ FakeUverbs::kQpHandle, UVERBS_OBJECT_QP },
			{ FakeUverbs::kSrqHandle, UVERBS_OBJECT_SRQ },
			{ FakeUverbs::kXrcdHandle, UVERBS_OBJECT_XRCD },
			{ FakeUverbs::kOpenQpHandle, UVERBS_OBJECT_QP },
		};
		const auto it = objects.find(handle);

		return it == objects.end() ? -1 : it->second;
	}

	// ib_uverbs_run_method()'s pass over the caller's attributes.
	static int bundle(const Method &m, ib_uverbs_ioctl_hdr *hdr, Bundle &b)
	{
		for (unsigned i = 0; i < hdr->num_attrs; i++) {
			ib_uverbs_attr &u = hdr->attrs[i];
			const auto s = std::find_if(
				m.attrs.begin(), m.attrs.end(),
				[&](const Spec &x) {
					return x.id == u.attr_id;
				});
			if (s == m.attrs.end()) {
				if (u.flags & UVERBS_ATTR_F_MANDATORY)
					return EPROTONOSUPPORT;
				continue;
			}
			if (b.count(u.attr_id) || u.attr_data.reserved)
				return EINVAL;
			if (s->kind == Kind::Out &&
			    (u.len < s->min_len || u.len > s->max_len))
				return EINVAL;
			if (s->kind == Kind::Idr) {
				if (u.len)
					return EINVAL;
				const int type = type_of(u.data);
				if (type < 0)
					return ENOENT;
				if (type != s->obj_type)
					return EINVAL;
			}
			b[u.attr_id] = &u;
		}
		for (const auto &s : m.attrs)
			if (s.mandatory && !b.count(s.id))
				return EINVAL;
		return 0;
	}

	// uverbs_copy_to() into attribute id, if the caller sent it; with
	// zero_rest, uverbs_copy_to_struct_or_zero().
	static void copy_to(Bundle &b, uint16_t id, const void *v, size_t len,
			    bool zero_rest = false)
	{
		const auto it = b.find(id);

		if (it == b.end())
			return;
		ib_uverbs_attr *u = it->second;
		auto *dst = reinterpret_cast<unsigned char *>(
			static_cast<uintptr_t>(u->data));
		std::memcpy(dst, v, std::min<size_t>(u->len, len));
		if (zero_rest && u->len > len)
			std::memset(dst + len, 0, u->len - len);
		u->flags |= UVERBS_ATTR_F_VALID_OUTPUT;
	}

	int query_context(Bundle &b)
	{
		sroce_alloc_ucontext_resp drv{};

		copy_to(b, UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS,
			&num_comp_vectors, sizeof(num_comp_vectors));
		copy_to(b, UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT,
			&core_support, sizeof(core_support));
		drv.abi_version = kernel_.abi_version;
		drv.max_inline_data = kernel_.context_inline;
		copy_to(b, SROCE_ATTR_QUERY_CONTEXT_RESP, &drv, sizeof(drv),
			true);
		return 0;
	}

	int pd_query(Bundle &b)
	{
		const uint32_t pdn = FakeUverbs::kPdn;

		copy_to(b, SROCE_ATTR_QUERY_PD_RESP_PDN, &pdn, sizeof(pdn));
		return 0;
	}

	int query_mr(Bundle &b)
	{
		const uint64_t iova = 0;

		copy_to(b, UVERBS_ATTR_QUERY_MR_RESP_LKEY, &mr_lkey,
			sizeof(mr_lkey));
		copy_to(b, UVERBS_ATTR_QUERY_MR_RESP_RKEY, &mr_rkey,
			sizeof(mr_rkey));
		copy_to(b, UVERBS_ATTR_QUERY_MR_RESP_LENGTH, &mr_length,
			sizeof(mr_length));
		copy_to(b, UVERBS_ATTR_QUERY_MR_RESP_IOVA, &iova, sizeof(iova));
		return 0;
	}

	FakeUverbs &kernel_;
};

} // namespace sroce_provider_test

#endif
