/* The store's SQLite VFS: unix-excl with a WAL file's writes gathered (see db_sqlite_vfs.h). */
#include "store/db_sqlite_vfs.h"

#include <pthread.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "store/wal_sync.h"

#define VFS_NAME "tide-excl"

/* Bytes gathered at most: 30 frames of 4 KiB pages in one write. SQLite's
 * unix write passes at most 128 KiB - 1 to each pwrite (and fails on a
 * multiple of 128 KiB), so a gathered write stays below that. */
#define GATHER_MAX (124 * 1024)

/* What SQLite holds for an open file; the unix-excl file follows it. */
struct gfile {
    sqlite3_file base;
    sqlite3_file *real;
    unsigned char *buf; /* WAL files: bytes not written yet (GATHER_MAX, made at first use) */
    sqlite3_int64 off;  /* where buf[0] belongs in the file */
    size_t len;
    bool commit_page_next; /* the last write was a commit frame's header */
    sqlite3_int64 end;     /* past the furthest byte written since the WAL began again */
};

static sqlite3_vfs *real_vfs;
static sqlite3_vfs vfs;
static int registered = SQLITE_ERROR;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static struct gfile *gf(sqlite3_file *file)
{
    return (struct gfile *)file;
}

static sqlite3_file *real(sqlite3_file *file)
{
    return gf(file)->real;
}

/* Writes what is gathered; the buffer is empty afterwards, even on failure
 * (SQLite fails the transaction that wrote it). */
static int flush(struct gfile *f)
{
    if (!f->len)
        return SQLITE_OK;
    int n = (int)f->len;
    f->len = 0;
    int rc = f->real->pMethods->xWrite(f->real, f->buf, n, f->off);
    wal_sync_note_write(); /* only WAL files gather */
    return rc;
}

/* --- a WAL file: writes gathered, everything else sees them first --- */

/* A WAL frame's header: 24 bytes, the page's number then, in a commit's
 * last frame only, the database's size in pages (big-endian), else 0. */
#define WAL_FRAME_HEADER 24

static bool commit_frame_header(const void *data, int amt)
{
    const unsigned char *h = data;
    return amt == WAL_FRAME_HEADER && (h[4] | h[5] | h[6] | h[7]) != 0;
}

/* Keeps the write in the buffer when it continues what is there. */
static int gather(struct gfile *f, const void *data, int amt, sqlite3_int64 off)
{
    if (f->len && off == f->off + (sqlite3_int64)f->len && f->len + (size_t)amt <= GATHER_MAX) {
        memcpy(f->buf + f->len, data, (size_t)amt);
        f->len += (size_t)amt;
        return SQLITE_OK;
    }
    int rc = flush(f); /* elsewhere in the file (a frame written again): in order */
    if (rc != SQLITE_OK)
        return rc;
    if ((size_t)amt < GATHER_MAX && (f->buf || (f->buf = malloc(GATHER_MAX)) != NULL)) {
        memcpy(f->buf, data, (size_t)amt);
        f->off = off;
        f->len = (size_t)amt;
        return SQLITE_OK;
    }
    rc = f->real->pMethods->xWrite(f->real, data, amt, off);
    wal_sync_note_write();
    return rc;
}

/* A commit's frames reach the file by the end of its last frame's page,
 * before SQLite publishes them in the WAL index: another connection may
 * read them from then on, and at synchronous=NORMAL no sync comes first.
 * A write over bytes already written goes through at once: a transaction
 * that spilled pages early and wrote them again has its frames' checksums
 * rewritten as it commits, the commit frame's header last, and nothing
 * written after it would carry that header out before the commit is
 * published (recovery would then stop at it and lose the whole commit a
 * reader may have seen). A WAL that begins again is rewritten from its
 * header at 0: that, and what follows it, gathers as ever. */
static int wal_write(sqlite3_file *file, const void *data, int amt, sqlite3_int64 off)
{
    struct gfile *f = gf(file);
    if (off == 0)
        f->end = 0;
    bool rewrite = off < f->end;
    if (off + amt > f->end)
        f->end = off + amt;
    bool last_page = f->commit_page_next;
    f->commit_page_next = commit_frame_header(data, amt);
    if (rewrite) {
        int rc = flush(f); /* in order */
        if (rc == SQLITE_OK)
            rc = f->real->pMethods->xWrite(f->real, data, amt, off);
        wal_sync_note_write();
        return rc;
    }
    int rc = gather(f, data, amt, off);
    return rc == SQLITE_OK && last_page ? flush(f) : rc;
}

static int wal_read(sqlite3_file *file, void *out, int amt, sqlite3_int64 off)
{
    struct gfile *f = gf(file);
    if (f->len && off < f->off + (sqlite3_int64)f->len && off + amt > f->off) {
        int rc = flush(f);
        if (rc != SQLITE_OK)
            return rc;
    }
    return f->real->pMethods->xRead(f->real, out, amt, off);
}

static int wal_sync(sqlite3_file *file, int flags)
{
    int rc = flush(gf(file));
    return rc != SQLITE_OK ? rc : real(file)->pMethods->xSync(real(file), flags);
}

static int wal_truncate(sqlite3_file *file, sqlite3_int64 size)
{
    int rc = flush(gf(file));
    if (rc == SQLITE_OK)
        rc = real(file)->pMethods->xTruncate(real(file), size);
    wal_sync_note_write();
    return rc;
}

static int wal_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
    int rc = flush(gf(file));
    return rc != SQLITE_OK ? rc : real(file)->pMethods->xFileSize(real(file), size);
}

static int any_close(sqlite3_file *file)
{
    struct gfile *f = gf(file);
    int rc = flush(f);
    int closed = f->real->pMethods->xClose(f->real);
    free(f->buf);
    f->buf = NULL;
    return rc != SQLITE_OK ? rc : closed;
}

/* --- every file: the rest passes through --- */

static int any_read(sqlite3_file *file, void *out, int amt, sqlite3_int64 off)
{
    return real(file)->pMethods->xRead(real(file), out, amt, off);
}

static int any_write(sqlite3_file *file, const void *data, int amt, sqlite3_int64 off)
{
    return real(file)->pMethods->xWrite(real(file), data, amt, off);
}

static int any_truncate(sqlite3_file *file, sqlite3_int64 size)
{
    return real(file)->pMethods->xTruncate(real(file), size);
}

static int any_sync(sqlite3_file *file, int flags)
{
    return real(file)->pMethods->xSync(real(file), flags);
}

static int any_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
    return real(file)->pMethods->xFileSize(real(file), size);
}

static int any_lock(sqlite3_file *file, int level)
{
    return real(file)->pMethods->xLock(real(file), level);
}

static int any_unlock(sqlite3_file *file, int level)
{
    return real(file)->pMethods->xUnlock(real(file), level);
}

static int any_check_reserved(sqlite3_file *file, int *out)
{
    return real(file)->pMethods->xCheckReservedLock(real(file), out);
}

static int any_file_control(sqlite3_file *file, int op, void *arg)
{
    return real(file)->pMethods->xFileControl(real(file), op, arg);
}

static int any_sector_size(sqlite3_file *file)
{
    return real(file)->pMethods->xSectorSize(real(file));
}

static int any_device(sqlite3_file *file)
{
    return real(file)->pMethods->xDeviceCharacteristics(real(file));
}

static int any_shm_map(sqlite3_file *file, int region, int size, int extend, void volatile **out)
{
    return real(file)->pMethods->xShmMap(real(file), region, size, extend, out);
}

static int any_shm_lock(sqlite3_file *file, int offset, int n, int flags)
{
    return real(file)->pMethods->xShmLock(real(file), offset, n, flags);
}

static void any_shm_barrier(sqlite3_file *file)
{
    real(file)->pMethods->xShmBarrier(real(file));
}

static int any_shm_unmap(sqlite3_file *file, int delete_flag)
{
    return real(file)->pMethods->xShmUnmap(real(file), delete_flag);
}

static int any_fetch(sqlite3_file *file, sqlite3_int64 off, int amt, void **out)
{
    return real(file)->pMethods->xFetch(real(file), off, amt, out);
}

static int any_unfetch(sqlite3_file *file, sqlite3_int64 off, void *p)
{
    return real(file)->pMethods->xUnfetch(real(file), off, p);
}

static const sqlite3_io_methods pass_methods = {
    3,
    any_close,
    any_read,
    any_write,
    any_truncate,
    any_sync,
    any_file_size,
    any_lock,
    any_unlock,
    any_check_reserved,
    any_file_control,
    any_sector_size,
    any_device,
    any_shm_map,
    any_shm_lock,
    any_shm_barrier,
    any_shm_unmap,
    any_fetch,
    any_unfetch,
};

static const sqlite3_io_methods wal_methods = {
    3,
    any_close,
    wal_read,
    wal_write,
    wal_truncate,
    wal_sync,
    wal_file_size,
    any_lock,
    any_unlock,
    any_check_reserved,
    any_file_control,
    any_sector_size,
    any_device,
    any_shm_map,
    any_shm_lock,
    any_shm_barrier,
    any_shm_unmap,
    any_fetch,
    any_unfetch,
};

int db_sqlite_vfs_flush_wal(sqlite3_file *file)
{
    return file && file->pMethods == &wal_methods ? flush(gf(file)) : SQLITE_OK;
}

/* --- the VFS: opens through unix-excl, the rest is unix-excl's own --- */

static int vfs_open(sqlite3_vfs *v, const char *name, sqlite3_file *file, int flags, int *out_flags)
{
    (void)v;
    struct gfile *f = gf(file);
    memset(f, 0, sizeof *f);
    f->real = (sqlite3_file *)(f + 1);
    int rc = real_vfs->xOpen(real_vfs, name, f->real, flags, out_flags);
    /* As SQLite asks: no methods when nothing is open, else xClose will come. */
    file->pMethods = !f->real->pMethods               ? NULL
                     : (flags & SQLITE_OPEN_WAL) != 0 ? &wal_methods
                                                      : &pass_methods;
    return rc;
}

static int vfs_delete(sqlite3_vfs *v, const char *name, int sync_dir)
{
    (void)v;
    return real_vfs->xDelete(real_vfs, name, sync_dir);
}

static int vfs_access(sqlite3_vfs *v, const char *name, int flags, int *out)
{
    (void)v;
    return real_vfs->xAccess(real_vfs, name, flags, out);
}

static int vfs_full_pathname(sqlite3_vfs *v, const char *name, int n, char *out)
{
    (void)v;
    return real_vfs->xFullPathname(real_vfs, name, n, out);
}

static void *vfs_dl_open(sqlite3_vfs *v, const char *name)
{
    (void)v;
    return real_vfs->xDlOpen(real_vfs, name);
}

static void vfs_dl_error(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    real_vfs->xDlError(real_vfs, n, out);
}

typedef void (*dl_sym_fn)(void);

static dl_sym_fn vfs_dl_sym(sqlite3_vfs *v, void *handle, const char *symbol)
{
    (void)v;
    return real_vfs->xDlSym(real_vfs, handle, symbol);
}

static void vfs_dl_close(sqlite3_vfs *v, void *handle)
{
    (void)v;
    real_vfs->xDlClose(real_vfs, handle);
}

static int vfs_randomness(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return real_vfs->xRandomness(real_vfs, n, out);
}

static int vfs_sleep(sqlite3_vfs *v, int us)
{
    (void)v;
    return real_vfs->xSleep(real_vfs, us);
}

static int vfs_current_time(sqlite3_vfs *v, double *out)
{
    (void)v;
    return real_vfs->xCurrentTime(real_vfs, out);
}

static int vfs_last_error(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return real_vfs->xGetLastError(real_vfs, n, out);
}

static int vfs_current_time_int64(sqlite3_vfs *v, sqlite3_int64 *out)
{
    (void)v;
    return real_vfs->xCurrentTimeInt64(real_vfs, out);
}

static void register_vfs(void)
{
    real_vfs = sqlite3_vfs_find("unix-excl");
    if (!real_vfs || real_vfs->iVersion < 2)
        return;
    vfs.iVersion = 2;
    vfs.szOsFile = (int)sizeof(struct gfile) + real_vfs->szOsFile;
    vfs.mxPathname = real_vfs->mxPathname;
    vfs.zName = VFS_NAME;
    vfs.xOpen = vfs_open;
    vfs.xDelete = vfs_delete;
    vfs.xAccess = vfs_access;
    vfs.xFullPathname = vfs_full_pathname;
    vfs.xDlOpen = vfs_dl_open;
    vfs.xDlError = vfs_dl_error;
    vfs.xDlSym = vfs_dl_sym;
    vfs.xDlClose = vfs_dl_close;
    vfs.xRandomness = vfs_randomness;
    vfs.xSleep = vfs_sleep;
    vfs.xCurrentTime = vfs_current_time;
    vfs.xGetLastError = vfs_last_error;
    vfs.xCurrentTimeInt64 = vfs_current_time_int64;
    registered = sqlite3_vfs_register(&vfs, 0);
}

const char *db_sqlite_vfs(struct tide_err *err)
{
    pthread_once(&once, register_vfs);
    if (registered != SQLITE_OK) {
        tide_err_set(err, TIDE_EIO, NULL, "database: SQLite has no usable unix-excl VFS");
        return NULL;
    }
    return VFS_NAME;
}
