/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Container network through libnl-route-3, asked for by the annotation
 * org.cryo.network:
 *
 *	veth:HOSTIF:ADDR/PREFIX[:key=value]...
 *
 *	HOSTIF        name of the host end of the veth pair (created; must not exist)
 *	ADDR/PREFIX   IPv4 address of the container end, e.g. 10.88.0.2/24
 *	gw=A          default route inside the container via A
 *	host=A/P      address for the host end (else it is only brought up)
 *	name=IF       name of the container end (default eth0)
 *	mtu=N         MTU of both ends (68..65535)
 *
 * e.g. "veth:cryo0:10.88.0.2/24:gw=10.88.0.1:host=10.88.0.1/24". The
 * container's loopback is brought up too. Without the annotation the
 * container's netns is left exactly as the config made it.
 *
 * The runtime parent calls cryo_network_apply() once the container init
 * exists in its new netns (after clone, before `start`), and
 * cryo_network_teardown() on delete (destroying the netns removes the
 * pair anyway; teardown makes it explicit and handles a netns that
 * outlives the container).
 *
 * A host interface is named by whoever asks first: once ours is gone,
 * another container may hold the same name. So nothing is ever deleted
 * by name: the undo of a create deletes the ifindex it made, delete finds
 * the host end as the peer of the container end inside the container's
 * own netns.
 */
#ifndef CRYO_NETWORK_H
#define CRYO_NETWORK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <netinet/in.h>

#include <json-c/json.h>

#include "error.h"

#define CRYO_NETWORK_ANNOTATION "org.cryo.network"

struct cryo_network_spec {
	bool present;
	char host_ifname[16];      /* IFNAMSIZ */
	char ifname[16];
	struct in_addr addr;
	unsigned int prefix;
	bool has_gw;
	struct in_addr gw;
	bool has_host_addr;
	struct in_addr host_addr;
	unsigned int host_prefix;
	unsigned int mtu;          /* 0: kernel default */
};

/* Parse annotations[org.cryo.network] (annotations may be NULL). */
int cryo_network_parse(struct json_object *annotations, struct cryo_network_spec *out,
		       struct cryo_error *err);

/* Same, from the annotation's value. */
int cryo_network_parse_string(const char *value, struct cryo_network_spec *out,
			      struct cryo_error *err);

/* What cryo_network_apply() made. */
struct cryo_network_link {
	int host_ifindex;          /* the host end, 0: nothing */
};

/*
 * Create the veth pair with its container end directly inside the netns
 * of pid, configure both ends; *ret says what was made. On failure
 * nothing is left behind.
 */
int cryo_network_apply(const struct cryo_network_spec *spec, pid_t pid, struct cryo_network_link *ret,
		       struct cryo_error *err);

/*
 * Undo cryo_network_apply(): delete the host end by its ifindex if it is
 * still a veth (and so the pair); 0 if it is gone already.
 */
int cryo_network_undo(const struct cryo_network_link *link, struct cryo_error *err);

/*
 * Delete the pair of a container whose netns is netns_fd: the host end
 * is the peer of the container end (spec->ifname) found inside it.
 * netns_fd < 0 (the netns is gone, and the pair with it) or no such
 * interface: 0, nothing is touched.
 */
int cryo_network_teardown(const struct cryo_network_spec *spec, int netns_fd, struct cryo_error *err);

/*
 * Before a restore has CRIU make the pair again (its --veth-pair): wait
 * up to timeout_ms for the host end's name to be free. The pair of a
 * container killed a moment ago (a checkpoint that stopped it) goes when
 * the kernel destroys its netns, which it does asynchronously. EEXIST
 * if the name is still taken.
 */
int cryo_network_wait_name_free(const struct cryo_network_spec *spec, int timeout_ms, struct cryo_error *err);

/*
 * After CRIU restored the container's netns with its end of the pair
 * (addresses and routes inside come from the image): bring up the host
 * end CRIU made, named spec->host_ifname, and give it the host address,
 * as cryo_network_apply() does; *ret says what undo deletes. A host
 * interface of that name that is not a veth with its peer in another
 * netns is left alone (EEXIST).
 */
int cryo_network_restore_host(const struct cryo_network_spec *spec, struct cryo_network_link *ret,
			      struct cryo_error *err);

/*
 * The host end of the pair of a container whose netns is netns_fd (the
 * peer of spec->ifname inside): its ifindex and name. ENOENT if there is
 * no such pair.
 */
int cryo_network_host_end(const struct cryo_network_spec *spec, int netns_fd, int *ret_ifindex,
			  char ret_name[16], struct cryo_error *err);

/*
 * Bring the host interface ifindex up or down, if it is still called
 * name (an index of a pair that went may be another's now: ENODEV).
 */
int cryo_network_set_up(int ifindex, const char *name, bool up, struct cryo_error *err);

/* The undo of a CRYO_HOLD_LINK_UP hold (for the watchdog and `cryo recover`). */
struct cryo_hold_rec;
int cryo_network_hold_undo(const struct cryo_hold_rec *rec, struct cryo_error *err);

void cryo_network_spec_free(struct cryo_network_spec *spec);

#endif
