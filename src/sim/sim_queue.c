/* Waiting jobs by shape in policy order (see sim_queue.h). */
#include "sim/sim_queue.h"

#include <stdlib.h>
#include <string.h>

#include "common/tide_err.h"
#include "core/gpu_share.h"

int sim_queue_init(struct sim_queue *q, struct cluster *c, const struct order_ops *order,
                   size_t njobs)
{
    memset(q, 0, sizeof *q);
    q->shape_of = malloc((njobs ? njobs : 1) * sizeof *q->shape_of);
    q->pos = malloc((njobs ? njobs : 1) * sizeof *q->pos);
    if (!q->shape_of || !q->pos) {
        sim_queue_release(q);
        return TIDE_ENOMEM;
    }
    memset(q->pos, 0xff, (njobs ? njobs : 1) * sizeof *q->pos);
    q->c = c;
    q->order = order;
    q->extra = order->strict ? 1 : 0;
    q->on = true;
    return 0;
}

void sim_queue_release(struct sim_queue *q)
{
    if (!q)
        return;
    for (int s = 0; s < q->nshapes; s++)
        free(q->shapes[s].heap);
    free(q->shape_of);
    free(q->pos);
    free(q->out);
    memset(q, 0, sizeof *q);
}

static bool before(struct sim_queue *q, int64_t a, int64_t b)
{
    return q->order->compare(cluster_find_job(q->c, a), cluster_find_job(q->c, b)) < 0;
}

static void place(struct sim_queue *q, struct sim_queue_shape *s, size_t at, int64_t id)
{
    s->heap[at] = id;
    q->pos[id - 1] = (int32_t)at;
}

static void sift_up(struct sim_queue *q, struct sim_queue_shape *s, size_t at)
{
    int64_t id = s->heap[at];
    while (at > 0 && before(q, id, s->heap[(at - 1) / 2])) {
        place(q, s, at, s->heap[(at - 1) / 2]);
        at = (at - 1) / 2;
    }
    place(q, s, at, id);
}

static void sift_down(struct sim_queue *q, struct sim_queue_shape *s, size_t at)
{
    int64_t id = s->heap[at];
    for (;;) {
        size_t l = 2 * at + 1, best = at;
        int64_t best_id = id;
        if (l < s->n && before(q, s->heap[l], best_id))
            best = l, best_id = s->heap[l];
        if (l + 1 < s->n && before(q, s->heap[l + 1], best_id))
            best = l + 1, best_id = s->heap[l + 1];
        if (best == at)
            break;
        place(q, s, at, best_id);
        at = best;
    }
    place(q, s, at, id);
}

static int shape_for(struct sim_queue *q, const struct job *job)
{
    for (int s = 0; s < q->nshapes; s++) {
        const struct sim_queue_shape *sh = &q->shapes[s];
        if (sh->gpus == job->gpus && sh->max_nodes == job->max_nodes &&
            sh->gpu_memory_mib == job->gpu_memory_mib)
            return s;
    }
    if (q->nshapes == SIM_QUEUE_SHAPES)
        return -1;
    struct sim_queue_shape *sh = &q->shapes[q->nshapes];
    memset(sh, 0, sizeof *sh);
    sh->gpus = job->gpus;
    sh->max_nodes = job->max_nodes;
    sh->gpu_memory_mib = job->gpu_memory_mib;
    sh->unbounded = job->gpus <= 0 || gpu_job_wants_slice(job);
    return q->nshapes++;
}

void sim_queue_add(struct sim_queue *q, const struct job *job)
{
    if (!q->on)
        return;
    int s = shape_for(q, job);
    struct sim_queue_shape *sh = s >= 0 ? &q->shapes[s] : NULL;
    if (sh && sh->n == sh->cap) {
        size_t cap = sh->cap ? sh->cap * 2 : 64;
        int64_t *grown = realloc(sh->heap, cap * sizeof *grown);
        if (grown)
            sh->heap = grown, sh->cap = cap;
    }
    if (!sh || sh->n == sh->cap) {
        q->on = false; /* the driver gives passes every waiting job from now on */
        return;
    }
    q->shape_of[job->id - 1] = (int8_t)s;
    place(q, sh, sh->n++, job->id);
    sift_up(q, sh, sh->n - 1);
}

static void remove_at(struct sim_queue *q, struct sim_queue_shape *sh, size_t at)
{
    int64_t id = sh->heap[at];
    q->pos[id - 1] = -1;
    int64_t last = sh->heap[--sh->n];
    if (at == sh->n)
        return;
    place(q, sh, at, last);
    if (at > 0 && before(q, last, sh->heap[(at - 1) / 2]))
        sift_up(q, sh, at);
    else
        sift_down(q, sh, at);
}

void sim_queue_remove(struct sim_queue *q, int64_t id)
{
    if (!q->on || q->pos[id - 1] < 0)
        return;
    remove_at(q, &q->shapes[q->shape_of[id - 1]], (size_t)q->pos[id - 1]);
}

/* Takes the first k of a shape out (best first) into dst, then puts them
 * back: the heap is the same set afterwards. */
static void first_k(struct sim_queue *q, struct sim_queue_shape *sh, size_t k, int64_t *dst)
{
    for (size_t i = 0; i < k; i++) {
        dst[i] = sh->heap[0];
        remove_at(q, sh, 0);
    }
    for (size_t i = 0; i < k; i++) {
        place(q, sh, sh->n++, dst[i]);
        sift_up(q, sh, sh->n - 1);
    }
}

static bool room_for(struct sim_queue *q, size_t n)
{
    if (n <= q->out_cap)
        return true;
    size_t cap = q->out_cap ? q->out_cap : 256;
    while (cap < n)
        cap *= 2;
    int64_t *grown = realloc(q->out, cap * sizeof *grown);
    if (!grown)
        return false;
    q->out = grown;
    q->out_cap = cap;
    return true;
}

size_t sim_queue_candidates(struct sim_queue *q, int free_gpus, const int64_t **ids)
{
    size_t total = 0;
    for (int s = 0; s < q->nshapes; s++) {
        struct sim_queue_shape *sh = &q->shapes[s];
        size_t k = sh->unbounded ? sh->n
                                 : (size_t)(free_gpus > 0 ? free_gpus / sh->gpus : 0) + q->extra;
        if (k > sh->n)
            k = sh->n;
        if (!k)
            continue;
        if (!room_for(q, total + k))
            return (size_t)-1;
        if (k == sh->n)
            memcpy(q->out + total, sh->heap, k * sizeof *q->out);
        else
            first_k(q, sh, k, q->out + total);
        total += k;
    }
    *ids = q->out;
    return total;
}

size_t sim_queue_first(struct sim_queue *q, size_t want, bool (*keep)(const struct job *, void *),
                       void *ctx, struct job **out)
{
    size_t n = 0;
    int64_t firsts[16];
    if (want > 16)
        want = 16;
    for (int s = 0; s < q->nshapes; s++) {
        struct sim_queue_shape *sh = &q->shapes[s];
        if (!sh->n || !keep(cluster_find_job(q->c, sh->heap[0]), ctx))
            continue;
        size_t k = want < sh->n ? want : sh->n;
        first_k(q, sh, k, firsts);
        /* Insert each into out (kept sorted, at most want long). */
        for (size_t i = 0; i < k; i++) {
            struct job *job = cluster_find_job(q->c, firsts[i]);
            if (n == want && q->order->compare(job, out[n - 1]) >= 0)
                break; /* the rest of this shape come later still */
            size_t at = n < want ? n++ : n - 1;
            while (at > 0 && q->order->compare(job, out[at - 1]) < 0) {
                out[at] = out[at - 1];
                at--;
            }
            out[at] = job;
        }
    }
    return n;
}
