/*
 * The special items of an ETA plan (core/eta.h) grouped by shape: jobs
 * that fit the same nodes the same way (GPU count and gang splits, model,
 * GPU memory, pool rules, spot, capped queue, backoff end). Within one
 * round of the plan starts only take room, so once an item does not fit,
 * none of its shape behind it does until the round ends: a round looks at
 * each shape's first waiting item, not at every item (100k jobs asking for
 * one model on 1,000 nodes took seconds a plan, one look per job a round).
 */
#ifndef TIDE_ETA_SHAPES_H
#define TIDE_ETA_SHAPES_H

#include <stddef.h>
#include <stdint.h>

#include "core/eta.h"

struct eta_shape {
    int32_t start, end; /* its items: members[start..end), in order */
    int32_t head;       /* members index of its first item not started (end: none) */
};

struct eta_shapes {
    struct eta_shape *shapes;
    size_t n, cap;
    int32_t *members; /* item indexes by shape */
    size_t members_cap;
    int32_t *slots; /* open hash of shapes: shape index + 1; 0 empty */
    size_t nslots;
    int32_t *heap; /* this round's shapes still to look at, by head item */
    size_t nheap, heap_cap;
};

void eta_shapes_release(struct eta_shapes *s);

/* Groups the special items special[0..n) (indexes into items, in order)
 * and sets each one's shape. Returns 0 or TIDE_ENOMEM. */
int eta_shapes_build(struct eta_shapes *s, struct eta_item *items, const int32_t *special,
                     size_t n);

/* A new round: every shape with an item not started is looked at again. */
void eta_shapes_round_begin(struct eta_shapes *s);

/* The earliest item (in order) of the shapes still to look at in this
 * round; INT32_MAX: none. */
int32_t eta_shapes_top(const struct eta_shapes *s);

/* The top's shape is done with for this round (its first item does not
 * fit, or may not start yet). */
void eta_shapes_drop_top(struct eta_shapes *s);

/* The top item starts: its shape's next item is looked at next. */
void eta_shapes_start_top(struct eta_shapes *s);

#endif
