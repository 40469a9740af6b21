// SPDX-License-Identifier: GPL-2.0-only
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/stat.h>

#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/route.h>

#include "hold.h"
#include "network.h"
#include "util.h"

#define ANN "annotation " CRYO_NETWORK_ANNOTATION

static bool valid_ifname(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= IFNAMSIZ || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '/' || s[i] == ':' || s[i] == '=' || (unsigned char)s[i] <= ' ' || s[i] == 0x7f)
			return false;
	return true;
}

/* "A.B.C.D/P" with 1 <= P <= 32 */
static int parse_cidr(const char *s, const char *what, struct in_addr *addr, unsigned int *prefix,
		      struct cryo_error *err)
{
	char buf[INET_ADDRSTRLEN + 4];
	const char *slash = strchr(s, '/');
	uint64_t p;

	if (!slash || (size_t)(slash - s) >= INET_ADDRSTRLEN)
		return cryo_error_setx(err, EINVAL, ANN ": %s `%s` is not ADDRESS/PREFIX", what, s);
	memcpy(buf, s, (size_t)(slash - s));
	buf[slash - s] = '\0';
	if (inet_pton(AF_INET, buf, addr) != 1)
		return cryo_error_setx(err, EINVAL, ANN ": %s `%s` is not an IPv4 address", what, s);
	if (cryo_parse_u64(slash + 1, 32, &p) < 0 || p == 0)
		return cryo_error_setx(err, EINVAL, ANN ": %s `%s` needs a prefix length 1..32", what, s);
	*prefix = (unsigned int)p;
	return 0;
}

int cryo_network_parse_string(const char *value, struct cryo_network_spec *out, struct cryo_error *err)
{
	struct cryo_network_spec spec = { .present = true };
	char copy[513], *save, *tok;
	int field = 0, r;

	memset(out, 0, sizeof(*out));
	if (strlen(value) >= sizeof(copy))
		return cryo_error_setx(err, EINVAL, ANN ": longer than %zu bytes", sizeof(copy) - 1);
	memcpy(copy, value, strlen(value) + 1);
	snprintf(spec.ifname, sizeof(spec.ifname), "eth0");
	/* strtok_r would merge empty fields; strsep keeps them so "veth::x" is caught */
	save = copy;
	while ((tok = strsep(&save, ":")) != NULL) {
		char *eq = strchr(tok, '=');

		if (field == 0) {
			if (strcmp(tok, "veth") != 0)
				return cryo_error_setx(err, EINVAL, ANN ": unknown kind `%s` (expected veth:HOSTIF:ADDR/PREFIX[:gw=A][:host=A/P][:name=IF][:mtu=N])",
						       tok);
		} else if (field == 1) {
			if (!valid_ifname(tok))
				return cryo_error_setx(err, EINVAL, ANN ": invalid host interface name `%s`", tok);
			snprintf(spec.host_ifname, sizeof(spec.host_ifname), "%s", tok);
		} else if (field == 2) {
			r = parse_cidr(tok, "container address", &spec.addr, &spec.prefix, err);
			if (r < 0)
				return r;
		} else if (!eq) {
			return cryo_error_setx(err, EINVAL, ANN ": option `%s` is not KEY=VALUE", tok);
		} else {
			const char *v = eq + 1;

			*eq = '\0';
			if (strcmp(tok, "gw") == 0) {
				if (spec.has_gw)
					goto dup;
				if (inet_pton(AF_INET, v, &spec.gw) != 1)
					return cryo_error_setx(err, EINVAL, ANN ": gw `%s` is not an IPv4 address", v);
				spec.has_gw = true;
			} else if (strcmp(tok, "host") == 0) {
				if (spec.has_host_addr)
					goto dup;
				r = parse_cidr(v, "host address", &spec.host_addr, &spec.host_prefix, err);
				if (r < 0)
					return r;
				spec.has_host_addr = true;
			} else if (strcmp(tok, "name") == 0) {
				if (!valid_ifname(v))
					return cryo_error_setx(err, EINVAL, ANN ": invalid interface name `%s`", v);
				snprintf(spec.ifname, sizeof(spec.ifname), "%s", v);
			} else if (strcmp(tok, "mtu") == 0) {
				uint64_t m;

				if (spec.mtu)
					goto dup;
				if (cryo_parse_u64(v, 65535, &m) < 0 || m < 68)
					return cryo_error_setx(err, EINVAL, ANN ": mtu `%s` is not in 68..65535", v);
				spec.mtu = (unsigned int)m;
			} else {
				return cryo_error_setx(err, EINVAL, ANN ": unknown option `%s` (known: gw, host, name, mtu)", tok);
			}
		}
		field++;
		continue;
dup:
		return cryo_error_setx(err, EINVAL, ANN ": option `%s` given twice", tok);
	}
	if (field < 3)
		return cryo_error_setx(err, EINVAL, ANN ": `%s` is not veth:HOSTIF:ADDR/PREFIX[:key=value...]", value);
	/* no onlink routes: the gateway must be reachable on the container's subnet */
	if (spec.has_gw) {
		uint32_t mask = spec.prefix == 32 ? UINT32_MAX : ~(UINT32_MAX >> spec.prefix);
		char gw[INET_ADDRSTRLEN];

		if ((ntohl(spec.gw.s_addr) & mask) != (ntohl(spec.addr.s_addr) & mask) ||
		    spec.gw.s_addr == spec.addr.s_addr)
			return cryo_error_setx(err, EINVAL, ANN ": gw %s is not another address on the container's /%u subnet",
					       inet_ntop(AF_INET, &spec.gw, gw, sizeof(gw)), spec.prefix);
	}
	*out = spec;
	return 0;
}

int cryo_network_parse(struct json_object *annotations, struct cryo_network_spec *out, struct cryo_error *err)
{
	struct json_object *v;

	memset(out, 0, sizeof(*out));
	if (!annotations || !json_object_is_type(annotations, json_type_object) ||
	    !json_object_object_get_ex(annotations, CRYO_NETWORK_ANNOTATION, &v))
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return cryo_error_setx(err, EINVAL, ANN ": must be a string");
	return cryo_network_parse_string(json_object_get_string(v), out, err);
}

void cryo_network_spec_free(struct cryo_network_spec *spec)
{
	if (spec)
		memset(spec, 0, sizeof(*spec));
}

/* libnl speaks NLE_* codes; callers test -errno */
static int nl_errno(int nle)
{
	switch (nle < 0 ? -nle : nle) {
	case NLE_EXIST: return EEXIST;
	case NLE_OBJ_NOTFOUND: return ENOENT;
	case NLE_NODEV: return ENODEV;
	case NLE_PERM: return EPERM;
	case NLE_NOACCESS: return EACCES;
	case NLE_NOMEM: return ENOMEM;
	case NLE_BUSY: return EBUSY;
	case NLE_INVAL: return EINVAL;
	case NLE_RANGE: return ERANGE;
	case NLE_OPNOTSUPP: return EOPNOTSUPP;
	case NLE_AF_NOSUPPORT: return EAFNOSUPPORT;
	default: return EIO;
	}
}

static int nl_fail(struct cryo_error *err, int nle, const char *what, const char *ifname)
{
	return cryo_error_setx(err, nl_errno(nle), "%s `%s`: %s", what, ifname, nl_geterror(nle));
}

static int open_sock(struct nl_sock **ret, struct cryo_error *err)
{
	struct nl_sock *sk = nl_socket_alloc();
	int r;

	if (!sk)
		return cryo_error_set(err, ENOMEM, "allocate netlink socket");
	r = nl_connect(sk, NETLINK_ROUTE);
	if (r < 0) {
		nl_socket_free(sk);
		return cryo_error_setx(err, nl_errno(r), "connect rtnetlink: %s", nl_geterror(r));
	}
	*ret = sk;
	return 0;
}

/* Bring the link l (as the kernel gave it) up or down, with mtu if nonzero. */
static int change_link(struct nl_sock *sk, struct rtnl_link *l, bool up, unsigned int mtu, const char *ifname,
		       struct cryo_error *err)
{
	struct rtnl_link *change = rtnl_link_alloc();
	int r;

	if (!change)
		return cryo_error_set(err, ENOMEM, "%s `%s`", up ? "bring up" : "take down", ifname);
	if (up)
		rtnl_link_set_flags(change, IFF_UP);
	else
		rtnl_link_unset_flags(change, IFF_UP);
	if (mtu)
		rtnl_link_set_mtu(change, mtu);
	r = rtnl_link_change(sk, l, change, 0);
	rtnl_link_put(change);
	if (r < 0)
		return nl_fail(err, r, up ? "bring up" : "take down", ifname);
	return 0;
}

static int link_up(struct nl_sock *sk, const char *ifname, int *ret_index, struct cryo_error *err)
{
	struct rtnl_link *l = NULL;
	int r;

	r = rtnl_link_get_kernel(sk, 0, ifname, &l);
	if (r < 0)
		return nl_fail(err, r, "find link", ifname);
	r = change_link(sk, l, true, 0, ifname, err);
	if (ret_index)
		*ret_index = rtnl_link_get_ifindex(l);
	rtnl_link_put(l);
	return r;
}

static int add_addr(struct nl_sock *sk, int ifindex, const char *ifname, struct in_addr a, unsigned int prefix,
		    struct cryo_error *err)
{
	struct rtnl_addr *ra = rtnl_addr_alloc();
	struct nl_addr *local = nl_addr_build(AF_INET, &a, sizeof(a));
	int r = -NLE_NOMEM;

	if (ra && local) {
		nl_addr_set_prefixlen(local, (int)prefix);
		rtnl_addr_set_ifindex(ra, ifindex);
		r = rtnl_addr_set_local(ra, local);
		if (r >= 0)
			r = rtnl_addr_add(sk, ra, 0);
	}
	nl_addr_put(local);
	rtnl_addr_put(ra);
	if (r < 0)
		return nl_fail(err, r, "add address to", ifname);
	return 0;
}

static int add_default_route(struct nl_sock *sk, int ifindex, const char *ifname, struct in_addr gw,
			     struct cryo_error *err)
{
	struct in_addr any = { 0 };
	struct rtnl_route *rt = rtnl_route_alloc();
	struct rtnl_nexthop *nh = rtnl_route_nh_alloc();
	struct nl_addr *dst = nl_addr_build(AF_INET, &any, sizeof(any));
	struct nl_addr *via = nl_addr_build(AF_INET, &gw, sizeof(gw));
	int r = -NLE_NOMEM;

	if (rt && nh && dst && via) {
		nl_addr_set_prefixlen(dst, 0);
		rtnl_route_set_family(rt, AF_INET);
		rtnl_route_set_table(rt, RT_TABLE_MAIN);
		rtnl_route_set_scope(rt, RT_SCOPE_UNIVERSE);
		rtnl_route_set_protocol(rt, RTPROT_BOOT);
		rtnl_route_set_type(rt, RTN_UNICAST);
		r = rtnl_route_set_dst(rt, dst);
		rtnl_route_nh_set_ifindex(nh, ifindex);
		rtnl_route_nh_set_gateway(nh, via);
		rtnl_route_add_nexthop(rt, nh);
		nh = NULL; /* owned by the route now */
		if (r >= 0)
			r = rtnl_route_add(sk, rt, NLM_F_CREATE | NLM_F_EXCL);
	}
	if (nh)
		rtnl_route_nh_free(nh);
	nl_addr_put(dst);
	nl_addr_put(via);
	rtnl_route_put(rt);
	if (r < 0)
		return nl_fail(err, r, "add default route via the gateway on", ifname);
	return 0;
}

typedef int netns_fn(struct nl_sock *sk, void *arg, struct cryo_error *err);

struct in_netns {
	int netns_fd;
	netns_fn *fn;
	void *arg;
	int r;
	struct cryo_error err;
};

static void *in_netns_thread(void *p)
{
	struct in_netns *t = p;
	struct nl_sock *sk = NULL;

	if (setns(t->netns_fd, CLONE_NEWNET) < 0) {
		t->r = cryo_error_set(&t->err, errno, "enter the container's network namespace");
		return NULL;
	}
	t->r = open_sock(&sk, &t->err);
	if (t->r >= 0)
		t->r = t->fn(sk, t->arg, &t->err);
	nl_socket_free(sk);
	return NULL;
}

/*
 * Run fn with a netlink socket of the netns netns_fd, on a thread of its
 * own: setns(CLONE_NEWNET) changes only the calling thread, so the
 * runtime's other threads and its own netlink socket stay in the
 * runtime's namespace, and the socket opened there talks to the
 * container's.
 */
static int run_in_netns(int netns_fd, netns_fn *fn, void *arg, struct cryo_error *err)
{
	struct in_netns t = { .netns_fd = netns_fd, .fn = fn, .arg = arg, .err = CRYO_ERROR_INIT };
	pthread_t th;
	int r;

	r = pthread_create(&th, NULL, in_netns_thread, &t);
	if (r != 0)
		return cryo_error_set(err, r, "start the netns helper thread");
	pthread_join(th, NULL);
	if (t.r < 0) {
		cryo_error_move(err, &t.err);
		return cryo_error_prefix(err, "in the container's netns");
	}
	return 0;
}

static int configure_inside(struct nl_sock *sk, void *arg, struct cryo_error *err)
{
	const struct cryo_network_spec *spec = arg;
	int ifindex = 0, r;

	r = link_up(sk, "lo", NULL, err);
	if (r >= 0)
		r = link_up(sk, spec->ifname, &ifindex, err);
	if (r >= 0)
		r = add_addr(sk, ifindex, spec->ifname, spec->addr, spec->prefix, err);
	if (r >= 0 && cryo_fault("network-inside"))
		r = cryo_error_setx(err, EIO, "fault injected at network-inside");
	if (r >= 0 && spec->has_gw)
		r = add_default_route(sk, ifindex, spec->ifname, spec->gw, err);
	return r;
}

static int same_netns(int fd, bool *ret)
{
	struct stat a, b;

	if (fstat(fd, &a) < 0 || stat("/proc/self/ns/net", &b) < 0)
		return -errno;
	*ret = a.st_dev == b.st_dev && a.st_ino == b.st_ino;
	return 0;
}

/*
 * Delete the link with ifindex in sk's netns if it is a veth. By index
 * only: a request that names the link would hit whoever holds the name.
 */
static int delete_veth_index(struct nl_sock *sk, int ifindex, struct cryo_error *err)
{
	struct rtnl_link *l = NULL, *del;
	const char *type;
	int r;

	r = rtnl_link_get_kernel(sk, ifindex, NULL, &l);
	if (r == -NLE_OBJ_NOTFOUND || r == -NLE_NODEV)
		return 0;
	if (r < 0)
		return cryo_error_setx(err, nl_errno(r), "find link %d: %s", ifindex, nl_geterror(r));
	type = rtnl_link_get_type(l);
	if (!type || strcmp(type, "veth") != 0) {
		r = cryo_error_setx(err, EINVAL, "link %d (`%s`) is not a veth, refusing to delete it", ifindex,
				    rtnl_link_get_name(l) ? rtnl_link_get_name(l) : "?");
		rtnl_link_put(l);
		return r;
	}
	rtnl_link_put(l);
	del = rtnl_link_alloc();
	if (!del)
		return cryo_error_set(err, ENOMEM, "delete link %d", ifindex);
	rtnl_link_set_ifindex(del, ifindex);
	r = rtnl_link_delete(sk, del);
	rtnl_link_put(del);
	if (r < 0 && r != -NLE_OBJ_NOTFOUND && r != -NLE_NODEV)
		return cryo_error_setx(err, nl_errno(r), "delete link %d: %s", ifindex, nl_geterror(r));
	return 0;
}

int cryo_network_apply(const struct cryo_network_spec *spec, pid_t pid, struct cryo_network_link *ret,
		       struct cryo_error *err)
{
	_cleanup_close_ int netns_fd = -1;
	struct rtnl_link *veth = NULL, *peer;
	struct nl_sock *sk = NULL;
	char path[64];
	bool same = false;
	int host_index = 0, r;

	ret->host_ifindex = 0;
	if (!spec->present)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	netns_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (netns_fd < 0)
		return cryo_error_set(err, errno, "network: open %s", path);
	r = same_netns(netns_fd, &same);
	if (r < 0)
		return cryo_error_set(err, -r, "network: compare network namespaces");
	/* moving a veth end "into" our own netns would wire up the host itself */
	if (same)
		return cryo_error_setx(err, EINVAL,
				       "network: the container shares the runtime's network namespace; " ANN
				       " needs a network namespace of its own (linux.namespaces: network)");
	r = open_sock(&sk, err);
	if (r < 0)
		return cryo_error_prefix(err, "network");

	veth = rtnl_link_veth_alloc();
	if (!veth) {
		r = cryo_error_set(err, ENOMEM, "network: allocate veth");
		goto out;
	}
	peer = rtnl_link_veth_get_peer(veth);
	rtnl_link_set_name(veth, spec->host_ifname);
	rtnl_link_set_name(peer, spec->ifname);
	/* the peer is born inside the container: its name never clashes on the host */
	rtnl_link_set_ns_fd(peer, netns_fd);
	if (spec->mtu) {
		rtnl_link_set_mtu(veth, spec->mtu);
		rtnl_link_set_mtu(peer, spec->mtu);
	}
	rtnl_link_put(peer);
	r = rtnl_link_add(sk, veth, NLM_F_CREATE | NLM_F_EXCL);
	if (r < 0) {
		r = nl_fail(err, r, "create veth pair", spec->host_ifname);
		goto prefix;
	}

	r = link_up(sk, spec->host_ifname, &host_index, err);
	if (r < 0)
		goto undo;
	if (spec->has_host_addr) {
		r = add_addr(sk, host_index, spec->host_ifname, spec->host_addr, spec->host_prefix, err);
		if (r < 0)
			goto undo;
	}

	r = run_in_netns(netns_fd, configure_inside, (void *)spec, err);
	if (r < 0)
		goto undo;
	ret->host_ifindex = host_index;
	r = 0;
	goto out;
undo:
	/* deleting one end removes the pair, the container end included */
	if (host_index > 0) {
		struct cryo_error e = CRYO_ERROR_INIT;

		if (delete_veth_index(sk, host_index, &e) < 0)
			cryo_error_warn_clear(&e, "network: undo `%s`", spec->host_ifname);
	}
prefix:
	cryo_error_prefix(err, "network");
out:
	if (veth)
		rtnl_link_veth_release(veth);
	nl_socket_free(sk);
	return r;
}

int cryo_network_undo(const struct cryo_network_link *link, struct cryo_error *err)
{
	struct nl_sock *sk = NULL;
	int r;

	if (!link || link->host_ifindex <= 0)
		return 0;
	r = open_sock(&sk, err);
	if (r >= 0)
		r = delete_veth_index(sk, link->host_ifindex, err);
	nl_socket_free(sk);
	if (r < 0)
		return cryo_error_prefix(err, "network undo");
	return 0;
}

struct peer_query {
	const struct cryo_network_spec *spec;
	int peer_ifindex;          /* 0: no such container end */
};

static int find_peer_inside(struct nl_sock *sk, void *arg, struct cryo_error *err)
{
	struct peer_query *q = arg;
	struct rtnl_link *l = NULL;
	const char *type;
	int r;

	r = rtnl_link_get_kernel(sk, 0, q->spec->ifname, &l);
	if (r == -NLE_OBJ_NOTFOUND || r == -NLE_NODEV)
		return 0;
	if (r < 0)
		return nl_fail(err, r, "find link", q->spec->ifname);
	type = rtnl_link_get_type(l);
	/* IFLA_LINK of a veth end is its peer's ifindex, in the peer's netns: the runtime's */
	if (type && strcmp(type, "veth") == 0)
		q->peer_ifindex = rtnl_link_get_link(l);
	rtnl_link_put(l);
	return 0;
}

int cryo_network_teardown(const struct cryo_network_spec *spec, int netns_fd, struct cryo_error *err)
{
	struct peer_query q = { .spec = spec };
	struct cryo_network_link link = { 0 };
	bool same = false;
	int r;

	if (!spec->present || netns_fd < 0)
		return 0;
	/* the runtime's own netns has no container end of ours in it */
	r = same_netns(netns_fd, &same);
	if (r < 0)
		return cryo_error_set(err, -r, "network teardown: compare network namespaces");
	if (same)
		return 0;
	r = run_in_netns(netns_fd, find_peer_inside, &q, err);
	if (r >= 0) {
		link.host_ifindex = q.peer_ifindex;
		r = cryo_network_undo(&link, err);
	}
	if (r < 0)
		return cryo_error_prefix(err, "network teardown `%s`", spec->host_ifname);
	return 0;
}

int cryo_network_wait_name_free(const struct cryo_network_spec *spec, int timeout_ms, struct cryo_error *err)
{
	int64_t until = cryo_now_ms() + timeout_ms;

	if (!spec->present)
		return 0;
	for (;;) {
		if (if_nametoindex(spec->host_ifname) == 0) {
			if (errno == ENODEV || errno == ENXIO)
				return 0;
			return cryo_error_set(err, errno, "network: look up `%s`", spec->host_ifname);
		}
		if (cryo_now_ms() >= until)
			return cryo_error_setx(err, EEXIST,
					       "network: host interface `%s` exists: another container (or the host) holds the name the restored container's veth needs",
					       spec->host_ifname);
		cryo_sleep_ms(20);
	}
}

int cryo_network_restore_host(const struct cryo_network_spec *spec, struct cryo_network_link *ret,
			      struct cryo_error *err)
{
	struct rtnl_link *l = NULL;
	struct nl_sock *sk = NULL;
	const char *type;
	int32_t nsid;
	int index = 0, r;

	ret->host_ifindex = 0;
	if (!spec->present)
		return 0;
	r = open_sock(&sk, err);
	if (r < 0)
		return cryo_error_prefix(err, "network");
	r = rtnl_link_get_kernel(sk, 0, spec->host_ifname, &l);
	if (r < 0) {
		r = nl_fail(err, r, "find the restored host end", spec->host_ifname);
		goto out;
	}
	type = rtnl_link_get_type(l);
	/* what CRIU made: a veth whose peer is in another netns; anything else of that name is not ours */
	if (!type || strcmp(type, "veth") != 0 || rtnl_link_get_link_netnsid(l, &nsid) < 0) {
		r = cryo_error_setx(err, EEXIST, "host interface `%s` is not the host end of the restored veth pair",
				    spec->host_ifname);
		goto out;
	}
	index = rtnl_link_get_ifindex(l);
	r = change_link(sk, l, true, spec->mtu, spec->host_ifname, err);
	if (r >= 0 && spec->has_host_addr)
		r = add_addr(sk, index, spec->host_ifname, spec->host_addr, spec->host_prefix, err);
	if (r >= 0)
		ret->host_ifindex = index;
out:
	if (l)
		rtnl_link_put(l);
	nl_socket_free(sk);
	return r < 0 ? cryo_error_prefix(err, "network") : 0;
}

int cryo_network_host_end(const struct cryo_network_spec *spec, int netns_fd, int *ret_ifindex,
			  char ret_name[16], struct cryo_error *err)
{
	struct peer_query q = { .spec = spec };
	struct rtnl_link *l = NULL;
	struct nl_sock *sk = NULL;
	int r;

	if (!spec->present || netns_fd < 0)
		return cryo_error_setx(err, ENOENT, "network: the container has no veth of cryo's");
	r = run_in_netns(netns_fd, find_peer_inside, &q, err);
	if (r < 0)
		return cryo_error_prefix(err, "network");
	if (q.peer_ifindex <= 0)
		return cryo_error_setx(err, ENOENT, "network: no veth `%s` in the container", spec->ifname);
	r = open_sock(&sk, err);
	if (r < 0)
		return cryo_error_prefix(err, "network");
	r = rtnl_link_get_kernel(sk, q.peer_ifindex, NULL, &l);
	if (r < 0) {
		r = cryo_error_setx(err, nl_errno(r), "network: the host end of `%s` (index %d): %s", spec->ifname,
				    q.peer_ifindex, nl_geterror(r));
	} else {
		snprintf(ret_name, 16, "%s", rtnl_link_get_name(l) ? rtnl_link_get_name(l) : "");
		*ret_ifindex = q.peer_ifindex;
		rtnl_link_put(l);
	}
	nl_socket_free(sk);
	return r;
}

int cryo_network_set_up(int ifindex, const char *name, bool up, struct cryo_error *err)
{
	struct rtnl_link *l = NULL;
	struct nl_sock *sk = NULL;
	int r;

	r = open_sock(&sk, err);
	if (r < 0)
		return cryo_error_prefix(err, "network");
	r = rtnl_link_get_kernel(sk, ifindex, NULL, &l);
	if (r < 0) {
		r = nl_fail(err, r, "find link", name);
		goto out;
	}
	if (!rtnl_link_get_name(l) || strcmp(rtnl_link_get_name(l), name) != 0) {
		r = cryo_error_setx(err, ENODEV, "network: index %d is `%s` now, not `%s`", ifindex,
				    rtnl_link_get_name(l) ? rtnl_link_get_name(l) : "?", name);
		goto out;
	}
	r = change_link(sk, l, up, 0, name, err);
out:
	if (l)
		rtnl_link_put(l);
	nl_socket_free(sk);
	return r < 0 ? cryo_error_prefix(err, "network") : 0;
}

int cryo_network_hold_undo(const struct cryo_hold_rec *rec, struct cryo_error *err)
{
	uint64_t index;

	if (cryo_parse_u64(rec->backend, INT32_MAX, &index) < 0 || index == 0)
		return cryo_error_setx(err, EINVAL, "link-up hold: `%s` is not an interface index", rec->backend);
	return cryo_network_set_up((int)index, rec->target, true, err);
}
