/* Image references a job may name (image_ref.h). */
#include "core/image_ref.h"

#include <ctype.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "core/core_banned.h"

/* The transports of containers/image (podman, buildah, skopeo); "atomic"
 * is an old one some still accept. A name matches in any case, so a
 * runtime that ever folds case finds none of them either. Not "docker":
 * its transport needs "docker://" (refused below), and "docker:24-dind"
 * is Docker Hub's docker image at a tag, which runtimes read as such. */
static const char *const transports[] = {
    "atomic",        "containers-storage",
    "dir",           "docker-archive",
    "docker-daemon", "oci",
    "oci-archive",   "ostree",
    "sif",           "tarball",
};

bool image_ref_has_transport(const char *ref)
{
    const char *colon = ref ? strchr(ref, ':') : NULL;
    if (!colon)
        return false;
    size_t n = (size_t)(colon - ref);
    for (size_t i = 0; i < sizeof transports / sizeof transports[0]; i++)
        if (strlen(transports[i]) == n && !strncasecmp(ref, transports[i], n))
            return true;
    /* a transport this list does not know: before the first '/', a ':' can
     * only start a registry's port */
    const char *slash = strchr(ref, '/');
    if (!slash || slash < colon)
        return false;
    if (colon + 1 == slash)
        return true; /* "x:/path", "x://..." */
    for (const char *p = colon + 1; p < slash; p++)
        if (!isdigit((unsigned char)*p))
            return true;
    return false;
}
