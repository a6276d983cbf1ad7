/* The gpu_faults and node_faults rows (store_health.h). */
#include "store/store_health.h"

#include <stdio.h>
#include <string.h>

#include "store/store_db.h"

/* Replaces node's node_faults row: its fault count, since when, and
 * whether it failed (no row when none). */
static int save_node_count(struct db *db, const struct node *node, struct tide_err *err)
{
    struct db_stmt *del = db_prepare(db, "DELETE FROM node_faults WHERE node_id=?", err);
    struct db_stmt *ins = del ? db_prepare(db,
                                           "INSERT INTO node_faults(node_id, faults,"
                                           " window_start_ms, failed) VALUES(?,?,?,?)",
                                           err)
                              : NULL;
    int rc = ins ? 0 : TIDE_EIO;
    if (!rc) {
        db_bind_int64(del, 1, node->id);
        rc = db_step_done(del, "save the node's fault count", err);
    }
    if (!rc && (node->faults_in_window || node->health_failed)) {
        db_bind_int64(ins, 1, node->id);
        db_bind_int64(ins, 2, node->faults_in_window);
        db_bind_int64(ins, 3, node->fault_window_start_ms);
        db_bind_int64(ins, 4, node->health_failed);
        rc = db_step_done(ins, "save the node's fault count", err);
    }
    db_finalize(del);
    db_finalize(ins);
    return rc;
}

int store_gpu_faults_save(struct store *s, const struct node *node, struct tide_err *err)
{
    struct db *db = store_db(s);
    struct db_stmt *del = db_prepare(db, "DELETE FROM gpu_faults WHERE node_id=?", err);
    struct db_stmt *ins = del ? db_prepare(db,
                                           "INSERT INTO gpu_faults(node_id, gpu_index, faulty,"
                                           " fault, seq, seq_run) VALUES(?,?,?,?,?,?)",
                                           err)
                              : NULL;
    int rc = ins ? 0 : TIDE_EIO;
    if (!rc) {
        db_bind_int64(del, 1, node->id);
        rc = db_step_done(del, "save GPU faults", err);
    }
    for (int g = 0; g < node->ngpus && !rc; g++) {
        const struct gpu *gpu = &node->gpus[g];
        if (!gpu->faulty && !gpu->fault_seq)
            continue;
        db_reset(ins);
        db_bind_int64(ins, 1, node->id);
        db_bind_int64(ins, 2, gpu->index);
        db_bind_int64(ins, 3, gpu->faulty);
        db_bind_text(ins, 4, gpu->fault);
        db_bind_int64(ins, 5, gpu->fault_seq);
        db_bind_text(ins, 6, gpu->fault_run);
        rc = db_step_done(ins, "save GPU faults", err);
    }
    db_finalize(del);
    db_finalize(ins);
    return rc ? rc : save_node_count(db, node, err);
}

int store_gpu_faults_forget(struct store *s, int64_t node_id, struct tide_err *err)
{
    struct node gone;
    memset(&gone, 0, sizeof gone);
    gone.id = node_id;
    return store_gpu_faults_save(s, &gone, err);
}

static int load_node_counts(struct store *s, struct cluster *c, struct tide_err *err)
{
    struct db_stmt *st = db_prepare(
        store_db(s), "SELECT node_id, faults, window_start_ms, failed FROM node_faults", err);
    if (!st)
        return TIDE_EIO;
    int r;
    while ((r = db_step(st, "load the nodes' fault counts", err)) == DB_ROW) {
        struct node *node = cluster_find_node(c, db_column_int64(st, 0));
        if (!node)
            continue; /* deleted */
        node->faults_in_window = (int)db_column_int64(st, 1);
        node->fault_window_start_ms = db_column_int64(st, 2);
        node->health_failed = db_column_int64(st, 3) != 0;
    }
    db_finalize(st);
    return r < 0 ? r : 0;
}

int store_gpu_faults_load(struct store *s, struct cluster *c, struct tide_err *err)
{
    struct db_stmt *st = db_prepare(
        store_db(s), "SELECT node_id, gpu_index, faulty, fault, seq, seq_run FROM gpu_faults", err);
    if (!st)
        return TIDE_EIO;
    int r;
    while ((r = db_step(st, "load GPU faults", err)) == DB_ROW) {
        struct node *node = cluster_find_node(c, db_column_int64(st, 0));
        int index = (int)db_column_int64(st, 1);
        for (int g = 0; node && g < node->ngpus; g++) {
            struct gpu *gpu = &node->gpus[g];
            if (gpu->index != index)
                continue;
            gpu->faulty = db_column_int64(st, 2) != 0;
            const char *f = db_column_text(st, 3);
            snprintf(gpu->fault, sizeof gpu->fault, "%s", f ? f : "");
            gpu->fault_seq = db_column_int64(st, 4);
            const char *run = db_column_text(st, 5); /* NULL: stored before runs were */
            snprintf(gpu->fault_run, sizeof gpu->fault_run, "%s", run ? run : "");
        }
    }
    db_finalize(st);
    return r < 0 ? r : load_node_counts(s, c, err);
}
