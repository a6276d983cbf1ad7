/* Per-task cgroups (src/agent/cgroup*.c) without root: parsing
 * /proc/self/cgroup and mountinfo from fixture text, limit formatting, and
 * detection against cgroup-like directories made in a temp dir. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/cgroup.h"

/* This kind of machine: v1 hierarchies plus an empty unified one. */
static const char HYBRID_PROC[] = "9:name=systemd:/\n"
                                  "4:memory:/process_api/1b45\n"
                                  "2:cpu,cpuacct:/\n"
                                  "0::/\n";
static const char HYBRID_MOUNTS[] =
    "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct\n"
    "34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

static void test_proc_cgroup_gives_the_v1_memory_path(void **state)
{
    (void)state;
    char path[64];
    assert_int_equal(agent_cgroup_parse_proc(HYBRID_PROC, "memory", path, sizeof path), 0);
    assert_string_equal(path, "/process_api/1b45");
}

static void test_proc_cgroup_matches_whole_controller_names(void **state)
{
    (void)state;
    char path[64];
    assert_int_equal(agent_cgroup_parse_proc(HYBRID_PROC, "cpuacct", path, sizeof path), 0);
    assert_string_equal(path, "/");
    assert_int_equal(agent_cgroup_parse_proc(HYBRID_PROC, "cpuac", path, sizeof path), TIDE_ENOENT);
    assert_int_equal(agent_cgroup_parse_proc("0::/a\n", "memory", path, sizeof path), TIDE_ENOENT);
}

static void test_proc_cgroup_gives_the_v2_path_from_the_0_line(void **state)
{
    (void)state;
    char path[64];
    assert_int_equal(
        agent_cgroup_parse_proc("0::/user.slice/tide.service", NULL, path, sizeof path), 0);
    assert_string_equal(path, "/user.slice/tide.service");
    assert_int_equal(agent_cgroup_parse_proc("4:memory:/x\n", NULL, path, sizeof path),
                     TIDE_ENOENT);
}

static void test_proc_cgroup_path_that_does_not_fit_is_an_error(void **state)
{
    (void)state;
    char path[8];
    assert_int_equal(agent_cgroup_parse_proc("0::/a/long/path\n", NULL, path, sizeof path),
                     TIDE_ETOOBIG);
}

static void test_mount_joins_the_mount_point_and_the_group_path(void **state)
{
    (void)state;
    char dir[128];
    assert_int_equal(agent_cgroup_find_mount(HYBRID_MOUNTS, "cgroup", "memory", "/process_api/1b45",
                                             dir, sizeof dir),
                     0);
    assert_string_equal(dir, "/sys/fs/cgroup/memory/process_api/1b45");
    assert_int_equal(agent_cgroup_find_mount(HYBRID_MOUNTS, "cgroup2", NULL, "/", dir, sizeof dir),
                     0);
    assert_string_equal(dir, "/sys/fs/cgroup/unified");
    /* the cpu hierarchy has optional fields before the separator */
    assert_int_equal(agent_cgroup_find_mount(HYBRID_MOUNTS, "cgroup", "cpu", "/a", dir, sizeof dir),
                     0);
    assert_string_equal(dir, "/sys/fs/cgroup/cpu,cpuacct/a");
    assert_int_equal(agent_cgroup_find_mount(HYBRID_MOUNTS, "cgroup", "pids", "/", dir, sizeof dir),
                     TIDE_ENOENT);
}

static void test_mount_with_a_root_strips_it_from_the_group_path(void **state)
{
    (void)state;
    const char *mounts = "50 1 0:40 /docker/abc /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n";
    char dir[128];
    assert_int_equal(
        agent_cgroup_find_mount(mounts, "cgroup2", NULL, "/docker/abc/agent", dir, sizeof dir), 0);
    assert_string_equal(dir, "/sys/fs/cgroup/agent");
    assert_int_equal(
        agent_cgroup_find_mount(mounts, "cgroup2", NULL, "/docker/abc", dir, sizeof dir), 0);
    assert_string_equal(dir, "/sys/fs/cgroup");
    /* a sibling that only shares a prefix is not under the root */
    assert_int_equal(
        agent_cgroup_find_mount(mounts, "cgroup2", NULL, "/docker/abcd", dir, sizeof dir),
        TIDE_ENOENT);
    assert_int_equal(agent_cgroup_find_mount(mounts, "cgroup2", NULL, "/../x", dir, sizeof dir),
                     TIDE_ENOENT);
}

static void test_read_only_mount_is_told_apart_from_none(void **state)
{
    (void)state;
    const char *mounts = "40 30 0:37 / /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 ro\n";
    char dir[128];
    assert_int_equal(agent_cgroup_find_mount(mounts, "cgroup2", NULL, "/", dir, sizeof dir),
                     TIDE_EPERM);
}

static void test_mount_point_escapes_are_undone(void **state)
{
    (void)state;
    const char *mounts = "40 30 0:37 / /mnt/my\\040cgroups rw - cgroup2 none rw\n";
    char dir[128];
    assert_int_equal(agent_cgroup_find_mount(mounts, "cgroup2", NULL, "/a", dir, sizeof dir), 0);
    assert_string_equal(dir, "/mnt/my cgroups/a");
}

static void test_keyed_counters_are_read_by_whole_key(void **state)
{
    (void)state;
    const char *events = "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 1\n";
    int64_t v = -1;
    assert_int_equal(agent_cgroup_read_key(events, "oom_kill", &v), 0);
    assert_int_equal(v, 2);
    assert_int_equal(agent_cgroup_read_key(events, "oom", &v), 0);
    assert_int_equal(v, 3);
    assert_int_equal(agent_cgroup_read_key("oom_kill_disable 0\nunder_oom 0\n", "oom_kill", &v),
                     TIDE_ENOENT);
}

static void test_controller_lists_match_whole_words(void **state)
{
    (void)state;
    assert_true(agent_cgroup_list_has("cpuset cpu io memory pids\n", "cpu"));
    assert_true(agent_cgroup_list_has("cpuset cpu io memory pids\n", "pids"));
    assert_false(agent_cgroup_list_has("cpuset io memory\n", "cpu"));
    assert_false(agent_cgroup_list_has("memory", "mem"));
    assert_false(agent_cgroup_list_has("\n", "memory"));
}

static void test_memory_limit_is_written_in_bytes(void **state)
{
    (void)state;
    char buf[32];
    assert_int_equal(agent_cgroup_format_memory(64, buf, sizeof buf), 0);
    assert_string_equal(buf, "67108864");
    assert_int_equal(agent_cgroup_format_memory(0, buf, sizeof buf), TIDE_EINVAL);
    assert_int_equal(agent_cgroup_format_memory(INT64_MAX / 2, buf, sizeof buf), TIDE_EINVAL);
    assert_int_equal(agent_cgroup_format_memory(64, buf, 4), TIDE_EINVAL);
}

static void test_cpu_quota_is_cpus_times_the_period(void **state)
{
    (void)state;
    char buf[32];
    assert_int_equal(agent_cgroup_format_cpu_max(2, buf, sizeof buf), 0);
    assert_string_equal(buf, "200000 100000");
    assert_int_equal(agent_cgroup_format_cpu_max(0, buf, sizeof buf), 0);
    assert_string_equal(buf, "max 100000");
    assert_int_equal(agent_cgroup_format_cpu_max(-1, buf, sizeof buf), TIDE_EINVAL);
}

/* ---- detection against directories that look like cgroupfs ---- */

struct fake_fs {
    char root[64];
    char mounts[1024];
};

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[600]; /* dir (up to 255) and a name: room for both, even at -O3 */
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* root/unified (cgroup2, subtree_control as given) and root/memory/agent
 * (v1, with memory.limit_in_bytes when v1 is true). */
static void fake_fs_make(struct fake_fs *fs, const char *subtree, bool v1)
{
    snprintf(fs->root, sizeof fs->root, "/tmp/tide-cgtest-XXXXXX");
    assert_non_null(mkdtemp(fs->root));
    char d[256];
    snprintf(d, sizeof d, "%s/unified", fs->root);
    assert_int_equal(mkdir(d, 0755), 0);
    write_file(d, "cgroup.subtree_control", subtree);
    snprintf(d, sizeof d, "%s/memory", fs->root);
    assert_int_equal(mkdir(d, 0755), 0);
    snprintf(d, sizeof d, "%s/memory/agent", fs->root);
    assert_int_equal(mkdir(d, 0755), 0);
    if (v1)
        write_file(d, "memory.limit_in_bytes", "9223372036854771712\n");
    snprintf(fs->mounts, sizeof fs->mounts,
             "34 30 0:31 / %s/memory rw,relatime - cgroup cgroup rw,memory\n"
             "40 30 0:37 / %s/unified rw,relatime - cgroup2 cgroup2 rw\n",
             fs->root, fs->root);
}

static void fake_fs_remove(struct fake_fs *fs)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fs->root);
    assert_int_equal(system(cmd), 0);
}

static const char FAKE_PROC[] = "4:memory:/agent\n0::/\n";

static void test_v2_with_memory_delegated_is_preferred(void **state)
{
    (void)state;
    struct fake_fs fs;
    fake_fs_make(&fs, "cpu memory pids\n", true);
    static struct agent_cgroups cg;
    agent_cgroups_detect_from(&cg, FAKE_PROC, fs.mounts, false);
    assert_ptr_equal(cg.ops, &agent_cgroup_v2_ops);
    assert_true(cg.cpu);
    assert_true(strstr(cg.dir, "/unified") != NULL);
    assert_true(strstr(cg.summary, "cgroup v2") != NULL);
    assert_true(strstr(cg.summary, "CPU quotas") != NULL);
    fake_fs_remove(&fs);
}

static void test_v1_memory_is_used_when_v2_has_no_memory_controller(void **state)
{
    (void)state;
    struct fake_fs fs;
    fake_fs_make(&fs, "hugetlb\n", true);
    static struct agent_cgroups cg;
    agent_cgroups_detect_from(&cg, FAKE_PROC, fs.mounts, false);
    assert_ptr_equal(cg.ops, &agent_cgroup_v1_ops);
    assert_false(cg.cpu);
    char want[128];
    snprintf(want, sizeof want, "%s/memory/agent", fs.root);
    assert_string_equal(cg.dir, want);
    /* the log line says why v2 was passed over */
    assert_true(strstr(cg.summary, "v2 not used") != NULL);
    assert_true(strstr(cg.summary, "memory controller is not enabled") != NULL);
    fake_fs_remove(&fs);
}

static void test_nothing_usable_says_so_and_claims_no_limits(void **state)
{
    (void)state;
    struct fake_fs fs;
    fake_fs_make(&fs, "", false);
    static struct agent_cgroups cg;
    agent_cgroups_detect_from(&cg, FAKE_PROC, fs.mounts, false);
    assert_null(cg.ops);
    assert_true(strstr(cg.summary, "no usable cgroups") != NULL);
    assert_true(strstr(cg.summary, "without memory or CPU limits") != NULL);
    agent_cgroups_detect_from(&cg, "", "", false);
    assert_null(cg.ops);
    fake_fs_remove(&fs);
}

static void test_group_whose_limit_cannot_be_set_is_not_left_behind(void **state)
{
    (void)state;
    struct fake_fs fs;
    fake_fs_make(&fs, "hugetlb\n", true);
    static struct agent_cgroups cg;
    agent_cgroups_detect_from(&cg, FAKE_PROC, fs.mounts, false);
    assert_ptr_equal(cg.ops, &agent_cgroup_v1_ops);
    /* a plain directory has no memory.limit_in_bytes in a new subdirectory */
    struct agent_cgroup_limits lim = {.memory_mib = 64};
    struct agent_cgroup *g = NULL;
    struct tide_err err;
    tide_err_clear(&err);
    assert_int_equal(agent_cgroup_create(&cg, 7, 1, &lim, &g, &err), TIDE_EIO);
    assert_null(g);
    assert_true(strstr(err.message, "memory.limit_in_bytes") != NULL);
    char path[sizeof cg.dir + 64];
    snprintf(path, sizeof path, "%s/%s7-1", cg.dir, cg.prefix);
    assert_int_equal(access(path, F_OK), -1);
    fake_fs_remove(&fs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proc_cgroup_gives_the_v1_memory_path),
        cmocka_unit_test(test_proc_cgroup_matches_whole_controller_names),
        cmocka_unit_test(test_proc_cgroup_gives_the_v2_path_from_the_0_line),
        cmocka_unit_test(test_proc_cgroup_path_that_does_not_fit_is_an_error),
        cmocka_unit_test(test_mount_joins_the_mount_point_and_the_group_path),
        cmocka_unit_test(test_mount_with_a_root_strips_it_from_the_group_path),
        cmocka_unit_test(test_read_only_mount_is_told_apart_from_none),
        cmocka_unit_test(test_mount_point_escapes_are_undone),
        cmocka_unit_test(test_keyed_counters_are_read_by_whole_key),
        cmocka_unit_test(test_controller_lists_match_whole_words),
        cmocka_unit_test(test_memory_limit_is_written_in_bytes),
        cmocka_unit_test(test_cpu_quota_is_cpus_times_the_period),
        cmocka_unit_test(test_v2_with_memory_delegated_is_preferred),
        cmocka_unit_test(test_v1_memory_is_used_when_v2_has_no_memory_controller),
        cmocka_unit_test(test_nothing_usable_says_so_and_claims_no_limits),
        cmocka_unit_test(test_group_whose_limit_cannot_be_set_is_not_left_behind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
