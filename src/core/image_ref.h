/*
 * Which image references a job may name. podman and skopeo read a reference
 * with a transport prefix (docker-archive:/x.tar, oci:DIR, dir:DIR,
 * containers-storage:..., docker://...) from the node's files or another
 * store, as the user the runtime runs as (root), and store what they load
 * under the name the archive gives: a job could read root-only archives and
 * plant an image under another job's name. Jobs name images in a registry
 * (or already held by the node) alone.
 */
#ifndef TIDE_CORE_IMAGE_REF_H
#define TIDE_CORE_IMAGE_REF_H

#include <stdbool.h>

/* How a refusal says what is expected, for the server's 400 and the agent's
 * start failure alike. */
#define IMAGE_REF_EXPECTED                                                                         \
    "a registry reference is expected (registry/name:tag, name:tag or name@sha256:...), not a "    \
    "transport such as docker-archive:, oci: or docker://"

/* Whether ref starts with a transport: a transport's name before its first
 * ':' (whatever follows), or, before its first '/', a ':' followed by
 * anything but a registry's port (host:5000/name). name:tag,
 * host:5000/name:tag and name@sha256:... are not. NULL: false. */
bool image_ref_has_transport(const char *ref);

#endif
