/* Image keys and node image caches (image.h). */
#include "core/image.h"

#include <string.h>

#include "core/core_banned.h"

/* FNV-1a over a string, continuing from h. */
static uint64_t fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

uint64_t image_key(const char *name)
{
    if (!name || !*name)
        return 0;
    uint64_t h = fnv1a(14695981039346656037ULL, name);
    /* a tag follows the last '/'; a digest is '@...' */
    const char *last = strrchr(name, '/');
    const char *tail = last ? last + 1 : name;
    if (!strchr(tail, ':') && !strchr(name, '@'))
        h = fnv1a(h, ":latest");
    return h ? h : 1;
}

bool image_node_holds(const struct node *node, uint64_t key)
{
    if (!key)
        return false;
    for (int i = 0; i < node->nimages && i < TIDE_MAX_NODE_IMAGES; i++)
        if (node->image_keys[i] == key)
            return true;
    return false;
}

void image_node_set(struct node *node, const char *const *names, int n)
{
    node->nimages = 0;
    for (int i = 0; i < n && node->nimages < TIDE_MAX_NODE_IMAGES; i++) {
        uint64_t k = image_key(names[i]);
        if (k && !image_node_holds(node, k))
            node->image_keys[node->nimages++] = k;
    }
}
