// SPDX-License-Identifier: GPL-2.0-only
/*
 * Loading a libseccomp filter, with -ENOSYS for the syscalls the profile
 * could not know.
 *
 * A profile lists the syscalls of its time; with a deny default, a
 * syscall added to the kernel later gets the default errno (EPERM), and
 * a libc that tries the new call first (clone3, faccessat2, openat2)
 * takes EPERM for a refusal instead of falling back to the old one, as it
 * does on -ENOSYS. So, as runc does, every syscall number above the
 * highest one the profile names for an architecture returns -ENOSYS.
 * libseccomp can't say "every number above N": its program is exported
 * (seccomp_export_bpf) and loaded behind a short stub of our own that
 * returns ERRNO(ENOSYS) for those numbers and falls through to it for
 * all others. Not with an allow (or log) default: there every unknown
 * syscall runs anyway.
 *
 * x32 shares x86_64's AUDIT_ARCH; its numbers carry __X32_SYSCALL_BIT.
 * An architecture the profile doesn't list gets no stub: libseccomp's
 * program gives it its bad-architecture action.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include <seccomp.h>

#include "seccomp-load.h"
#include "util.h"

#define X32_SYSCALL_BIT 0x40000000u
#define STUB_MAX 128

struct arch_max {
	int64_t max;      /* highest syscall number the profile names, -1: none */
	int64_t max_x32;  /* x86_64 only: the same for x32 (without the bit), -1: none */
	uint32_t audit;   /* seccomp_data.arch */
	bool x32;         /* x86_64 only: the profile lists x32 */
};

enum { L_NONE = -1, L_ENOSYS = -2, L_END = -3 };

struct stub {
	struct sock_filter insn[STUB_MAX];
	int jt[STUB_MAX], jf[STUB_MAX]; /* a label (instruction index or L_*) for each jump */
	size_t n;
	bool overflow;
};

static size_t emit(struct stub *s, uint16_t code, uint32_t k, int jt, int jf)
{
	if (s->n >= STUB_MAX) {
		s->overflow = true;
		return s->n;
	}
	s->insn[s->n] = (struct sock_filter)BPF_STMT(code, k);
	s->jt[s->n] = jt;
	s->jf[s->n] = jf;
	return s->n++;
}

/* resolve labels: conditional jumps are 8-bit offsets, `ja` a 32-bit one */
static int link_stub(struct stub *s)
{
	size_t enosys = s->n, end = s->n + 1;

	emit(s, BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA), L_NONE, L_NONE);
	if (s->overflow)
		return -E2BIG;
	for (size_t i = 0; i < enosys; i++) {
		int lbl[2] = { s->jt[i], s->jf[i] };
		size_t to[2];

		for (int j = 0; j < 2; j++)
			to[j] = lbl[j] == L_ENOSYS ? enosys : lbl[j] == L_END ? end : lbl[j] >= 0 ? (size_t)lbl[j] : i + 1;
		if (BPF_CLASS(s->insn[i].code) != BPF_JMP)
			continue;
		if (BPF_OP(s->insn[i].code) == BPF_JA) {
			s->insn[i].k = (uint32_t)(to[0] - i - 1);
			continue;
		}
		if (to[0] - i - 1 > 255 || to[1] - i - 1 > 255)
			return -E2BIG;
		s->insn[i].jt = (uint8_t)(to[0] - i - 1);
		s->insn[i].jf = (uint8_t)(to[1] - i - 1);
	}
	return 0;
}

/* nr > max → -ENOSYS, else on to libseccomp's program */
static void emit_check(struct stub *s, int64_t max)
{
	if (max >= 0)
		emit(s, BPF_JMP | BPF_JGT | BPF_K, (uint32_t)max, L_ENOSYS, L_NONE);
	emit(s, BPF_JMP | BPF_JA, 0, L_END, L_END);
}

static int build_stub(const struct arch_max *a, size_t n, struct stub *s)
{
	size_t jeq[CRYO_SECCOMP_LOAD_MAX_ARCHES + 1];

	s->n = 0;
	s->overflow = false;
	emit(s, BPF_LD | BPF_W | BPF_ABS, (uint32_t)offsetof(struct seccomp_data, arch), L_NONE, L_NONE);
	for (size_t i = 0; i < n; i++)
		jeq[i] = emit(s, BPF_JMP | BPF_JEQ | BPF_K, a[i].audit, L_NONE, L_NONE);
	emit(s, BPF_JMP | BPF_JA, 0, L_END, L_END);
	for (size_t i = 0; i < n && !s->overflow; i++) {
		s->jt[jeq[i]] = (int)s->n;
		emit(s, BPF_LD | BPF_W | BPF_ABS, (uint32_t)offsetof(struct seccomp_data, nr), L_NONE, L_NONE);
		if (a[i].audit == AUDIT_ARCH_X86_64) {
			size_t jset = emit(s, BPF_JMP | BPF_JSET | BPF_K, X32_SYSCALL_BIT, L_NONE, L_NONE);

			emit_check(s, a[i].max);
			s->jt[jset] = (int)s->n;
			/* x32 not listed: its numbers are libseccomp's to refuse as a bad arch */
			emit_check(s, a[i].x32 && a[i].max_x32 >= 0 ? (int64_t)X32_SYSCALL_BIT + a[i].max_x32 : -1);
		} else {
			emit_check(s, a[i].max);
		}
	}
	return link_stub(s);
}

static struct arch_max *arch_entry(struct arch_max *a, size_t *n, uint32_t audit)
{
	for (size_t i = 0; i < *n; i++)
		if (a[i].audit == audit)
			return &a[i];
	a[*n] = (struct arch_max){ .max = -1, .max_x32 = -1, .audit = audit };
	return &a[(*n)++];
}

/* The highest syscall number the profile names, per architecture it lists (and the native one). */
static size_t profile_maxima(const struct cryo_seccomp_load *l, struct arch_max *a)
{
	uint32_t tokens[CRYO_SECCOMP_LOAD_MAX_ARCHES + 1];
	size_t n_tokens = 0, n = 0;

	tokens[n_tokens++] = seccomp_arch_native();
	for (size_t i = 0; i < l->n_arches && n_tokens < ARRAY_SIZE(tokens); i++)
		tokens[n_tokens++] = l->arches[i];
	for (size_t t = 0; t < n_tokens; t++) {
		bool x32 = tokens[t] == SCMP_ARCH_X32;
		struct arch_max *e = arch_entry(a, &n, x32 ? AUDIT_ARCH_X86_64 : tokens[t]);
		int64_t *max = x32 ? &e->max_x32 : &e->max;

		e->x32 |= x32;
		for (size_t j = 0; j < l->n_names; j++) {
			int nr = seccomp_syscall_resolve_name_arch(tokens[t], l->names[j]);

			/* negative: not a syscall of that arch, or a pseudo-syscall (socketcall's) */
			if (nr < 0)
				continue;
			if (x32)
				nr &= ~(int)X32_SYSCALL_BIT;
			if (nr > *max)
				*max = nr;
		}
	}
	return n;
}

/* libseccomp's program, as the kernel would get it from seccomp_load() */
static int export_program(scmp_filter_ctx ctx, struct sock_filter **ret, size_t *ret_n)
{
	_cleanup_close_ int fd = memfd_create("cryo-seccomp", MFD_CLOEXEC);
	_cleanup_free_ struct sock_filter *prog = NULL;
	off_t size;
	int r;

	if (fd < 0)
		return -errno;
	r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return r;
	size = lseek(fd, 0, SEEK_END);
	if (size <= 0 || size % (off_t)sizeof(struct sock_filter) || size > (off_t)(BPF_MAXINSNS * sizeof(*prog)))
		return size <= 0 ? -EIO : -E2BIG;
	prog = malloc((size_t)size);
	if (!prog)
		return -ENOMEM;
	if (pread(fd, prog, (size_t)size, 0) != size)
		return -EIO;
	*ret = TAKE_PTR(prog);
	*ret_n = (size_t)size / sizeof(struct sock_filter);
	return 0;
}

/* Does the profile's filter get the -ENOSYS stub (any default but allow and log)? */
static bool wants_enosys(uint32_t default_action)
{
	return default_action != SCMP_ACT_ALLOW && default_action != SCMP_ACT_LOG;
}

int cryo_seccomp_load(scmp_filter_ctx ctx, const struct cryo_seccomp_load *l, int *ret_notify_fd,
		      struct cryo_error *err)
{
	struct arch_max arches[CRYO_SECCOMP_LOAD_MAX_ARCHES + 1];
	_cleanup_free_ struct sock_filter *filter = NULL, *prog = NULL;
	unsigned long flags = 0;
	struct sock_fprog fprog;
	struct stub *stub;
	size_t n_filter = 0, n_arches;
	long fd;
	int r;

	*ret_notify_fd = -1;
	if (!wants_enosys(l->default_action)) {
		r = seccomp_load(ctx);
		if (r >= 0 && l->notify) {
			r = seccomp_notify_fd(ctx);
			if (r >= 0)
				*ret_notify_fd = r;
			return r < 0 ? cryo_error_set(err, -r, "get the notify fd") : 0;
		}
		goto load_error;
	}
	r = export_program(ctx, &filter, &n_filter);
	if (r >= 0 && !filter)
		r = -EIO;
	if (r < 0)
		return cryo_error_set(err, -r, "export the filter");
	n_arches = profile_maxima(l, arches);
	stub = calloc(1, sizeof(*stub));
	if (!stub)
		return cryo_error_set(err, ENOMEM, "seccomp stub");
	r = build_stub(arches, n_arches, stub);
	if (r >= 0 && stub->n + n_filter > BPF_MAXINSNS)
		r = -E2BIG;
	if (r >= 0 && !(prog = malloc((stub->n + n_filter) * sizeof(*prog))))
		r = -ENOMEM;
	if (r < 0) {
		free(stub);
		return cryo_error_set(err, -r, "the -ENOSYS stub of the filter");
	}
	memcpy(prog, stub->insn, stub->n * sizeof(*prog));
	memcpy(prog + stub->n, filter, n_filter * sizeof(*prog));
	fprog = (struct sock_fprog){ .len = (unsigned short)(stub->n + n_filter), .filter = prog };
	free(stub);

	if (l->tsync)
		flags |= SECCOMP_FILTER_FLAG_TSYNC;
	if (l->log)
		flags |= SECCOMP_FILTER_FLAG_LOG;
	if (l->spec_allow)
		flags |= SECCOMP_FILTER_FLAG_SPEC_ALLOW;
	if (l->notify)
		flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER | (l->tsync ? SECCOMP_FILTER_FLAG_TSYNC_ESRCH : 0);
	fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &fprog);
	r = fd < 0 ? -errno : 0;
	if (r >= 0 && l->notify)
		*ret_notify_fd = (int)fd;
load_error:
	if (r == -EACCES || r == -EPERM)
		return cryo_error_set(err, -r,
				      "load filter (without noNewPrivileges it must be loaded while CAP_SYS_ADMIN is held)");
	if (r < 0)
		return cryo_error_set(err, -r, "load filter");
	return 0;
}
