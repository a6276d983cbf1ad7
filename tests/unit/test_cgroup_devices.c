/* Unit tests for GPU device isolation (src/agent/cgroup_devices.c, gpu.c's
 * minors): which minors a task is denied, and, where this machine lets
 * the test attach one (root, a cgroup v2 hierarchy), a real cgroup device
 * program on a real group, checked by opening device nodes from inside it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/cgroup.h"
#include "agent/gpu.h"
#include "common/fsutil.h"

static void test_a_task_is_denied_the_minors_of_the_gpus_it_was_not_given(void **state)
{
    (void)state;
    struct gpu_backend be;
    struct tide_err err;
    assert_int_equal(gpu_backend_open(&be, &gpu_fake_ops, "4xH200:141GB", "n", &err), 0);
    int deny[8];
    size_t n = gpu_backend_denied_minors(&be, (int[]){1, 3}, 2, deny);
    assert_int_equal(n, 2);
    assert_int_equal(deny[0], 0);
    assert_int_equal(deny[1], 2);
    assert_int_equal(gpu_backend_denied_minors(&be, NULL, 0, deny), 4); /* no GPU: none */
    gpu_backend_release(&be);
}

static void test_a_mig_instance_opens_its_own_gpu_and_no_other(void **state)
{
    (void)state;
    struct gpu_backend be;
    struct tide_err err;
    assert_int_equal(
        gpu_backend_open(&be, &gpu_fake_ops, "2xA100:80GB:mig=3g.40gb*2", "n", &err), 0);
    /* instances follow the physical GPUs: 2 and 3 are GPU 0's, 4 and 5 GPU 1's */
    const struct gpu_device *inst = gpu_backend_find(&be, 4);
    assert_non_null(inst);
    assert_int_equal(inst->parent_index, 1);
    assert_int_equal(inst->minor, -1);
    assert_int_equal(gpu_backend_minor_of(&be, 4), 1);
    int deny[8];
    size_t n = gpu_backend_denied_minors(&be, (int[]){4}, 1, deny);
    assert_int_equal(n, 1);
    assert_int_equal(deny[0], 0);
    gpu_backend_release(&be);
}

/* The directory of this process's group in the cgroup v2 hierarchy, if
 * there is one; false when not. */
static bool v2_dir(char *dir, size_t size)
{
    char *proc = NULL, *mounts = NULL;
    size_t len;
    bool ok = fs_read_file("/proc/self/cgroup", 1 << 20, &proc, &len) == 0 &&
              fs_read_file("/proc/self/mountinfo", 1 << 20, &mounts, &len) == 0;
    char path[PATH_MAX];
    ok = ok && agent_cgroup_parse_proc(proc, NULL, path, sizeof path) == 0 &&
         agent_cgroup_find_mount(mounts, "cgroup2", NULL, path, dir, size) == 0;
    free(proc);
    free(mounts);
    return ok;
}

static void test_a_device_program_refuses_the_denied_gpus_in_its_group(void **state)
{
    (void)state;
    char dir[PATH_MAX];
    if (geteuid() != 0 || !v2_dir(dir, sizeof dir))
        skip();
    char group[PATH_MAX + 64], nodes[] = "/tmp/tide-devices-XXXXXX";
    snprintf(group, sizeof group, "%s/tide-test-devices-%d", dir, (int)getpid());
    if (mkdir(group, 0755) != 0 || !mkdtemp(nodes)) {
        rmdir(group);
        skip();
    }
    struct agent_cgroups site;
    memset(&site, 0, sizeof site);
    site.devices = AGENT_DEVICES_BPF;
    struct agent_cgroup g = {.site = &site, .path = group, .procs_fd = -1, .devices_fd = -1};
    struct agent_cgroup_limits lim = {.deny_minors = (int[]){1, 3}, .ndeny = 2};
    char why[512];
    int rc = agent_cgroup_devices_apply(&g, 7, 1, &lim, why, sizeof why);
    if (rc != 0) { /* no cgroup device programs for us here */
        rmdir(group);
        rmdir(nodes);
        print_message("no device program: %s\n", why);
        skip();
    }
    char node[PATH_MAX + 32];
    for (int i = 0; i < 4; i++) {
        snprintf(node, sizeof node, "%s/nvidia%d", nodes, i);
        assert_int_equal(mknod(node, S_IFCHR | 0666, makedev(195, i)), 0);
    }
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) { /* in the group: how each open goes, as errno values */
        int answers[5] = {0};
        char procs[PATH_MAX + 80];
        snprintf(procs, sizeof procs, "%s/cgroup.procs", group);
        int fd = open(procs, O_WRONLY);
        if (fd < 0 || agent_cgroup_join(fd) != 0)
            _exit(2);
        for (int i = 0; i < 4; i++) {
            snprintf(node, sizeof node, "%s/nvidia%d", nodes, i);
            int d = open(node, O_RDWR);
            answers[i] = d < 0 ? errno : 0;
        }
        int null = open("/dev/null", O_RDWR); /* another char device: untouched */
        answers[4] = null < 0 ? errno : 0;
        _exit(write(pipefd[1], answers, sizeof answers) == sizeof answers ? 0 : 3);
    }
    close(pipefd[1]);
    int answers[5];
    ssize_t got = read(pipefd[0], answers, sizeof answers);
    int status = 0;
    waitpid(pid, &status, 0);
    close(pipefd[0]);
    for (int i = 0; i < 4; i++) {
        snprintf(node, sizeof node, "%s/nvidia%d", nodes, i);
        unlink(node);
    }
    rmdir(nodes);
    rmdir(group);
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(got, (ssize_t)sizeof answers);
    assert_int_equal(answers[0], ENXIO); /* its own: no driver behind it here */
    assert_int_equal(answers[1], EPERM);
    assert_int_equal(answers[2], ENXIO);
    assert_int_equal(answers[3], EPERM);
    assert_int_equal(answers[4], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_task_is_denied_the_minors_of_the_gpus_it_was_not_given),
        cmocka_unit_test(test_a_mig_instance_opens_its_own_gpu_and_no_other),
        cmocka_unit_test(test_a_device_program_refuses_the_denied_gpus_in_its_group),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
