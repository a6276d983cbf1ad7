/* The gpu_faults table (store_health.h). */
#include "store/store_health.h"

#include <stdio.h>
#include <string.h>

#include "store/store_pools.h"

static int fail(struct store *s, const char *what, struct tide_err *err)
{
    return tide_err_set(err, TIDE_EIO, NULL, "database: %s: %s", what,
                        sqlite3_errmsg(store_sqlite_db(s)));
}

int store_health_init(struct store *s, struct tide_err *err)
{
    return store_sqlite_exec(s,
                             "CREATE TABLE IF NOT EXISTS gpu_faults(node_id INTEGER NOT NULL,"
                             "  gpu_index INTEGER NOT NULL, faulty INTEGER NOT NULL, fault TEXT,"
                             "  seq INTEGER NOT NULL, PRIMARY KEY(node_id, gpu_index))",
                             err);
}

int store_gpu_faults_save(struct store *s, const struct node *node, struct tide_err *err)
{
    sqlite3 *db = store_sqlite_db(s);
    sqlite3_stmt *del = NULL, *ins = NULL;
    int rc = 0;
    if (sqlite3_prepare_v2(db, "DELETE FROM gpu_faults WHERE node_id=?", -1, &del, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO gpu_faults(node_id, gpu_index, faulty, fault, seq)"
                               " VALUES(?,?,?,?,?)", -1, &ins, NULL) != SQLITE_OK) {
        rc = fail(s, "save GPU faults", err);
        goto done;
    }
    sqlite3_bind_int64(del, 1, node->id);
    if (sqlite3_step(del) != SQLITE_DONE) {
        rc = fail(s, "save GPU faults", err);
        goto done;
    }
    for (int g = 0; g < node->ngpus && !rc; g++) {
        const struct gpu *gpu = &node->gpus[g];
        if (!gpu->faulty && !gpu->fault_seq)
            continue;
        sqlite3_reset(ins);
        sqlite3_bind_int64(ins, 1, node->id);
        sqlite3_bind_int(ins, 2, gpu->index);
        sqlite3_bind_int(ins, 3, gpu->faulty);
        sqlite3_bind_text(ins, 4, gpu->fault, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(ins, 5, gpu->fault_seq);
        if (sqlite3_step(ins) != SQLITE_DONE)
            rc = fail(s, "save GPU faults", err);
    }
done:
    sqlite3_finalize(del);
    sqlite3_finalize(ins);
    return rc;
}

int store_gpu_faults_load(struct store *s, struct cluster *c, struct tide_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_sqlite_db(s),
                           "SELECT node_id, gpu_index, faulty, fault, seq FROM gpu_faults", -1, &st,
                           NULL) != SQLITE_OK)
        return fail(s, "load GPU faults", err);
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        struct node *node = cluster_find_node(c, sqlite3_column_int64(st, 0));
        int index = sqlite3_column_int(st, 1);
        for (int g = 0; node && g < node->ngpus; g++) {
            struct gpu *gpu = &node->gpus[g];
            if (gpu->index != index)
                continue;
            gpu->faulty = sqlite3_column_int(st, 2) != 0;
            const unsigned char *f = sqlite3_column_text(st, 3);
            snprintf(gpu->fault, sizeof gpu->fault, "%s", f ? (const char *)f : "");
            gpu->fault_seq = sqlite3_column_int64(st, 4);
        }
    }
    int rc = r == SQLITE_DONE ? 0 : fail(s, "load GPU faults", err);
    sqlite3_finalize(st);
    return rc;
}
