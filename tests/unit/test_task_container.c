/* Unit tests for the container command line of a task (src/agent/task_container.c):
 * flags, env passed by name, mounts, limits, and GPU devices by CDI or
 * device node, with device and CDI directories made for the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/task.h"
#include "agent/task_container.h"
#include "agent/task_env_file.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tide-test-ctr-XXXXXX");
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    return 0;
}

static void touch(const char *sub)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
}

static char *sub(const char *name)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

/* Index of arg in argv, or -1. */
static int find(char **argv, const char *arg)
{
    for (int i = 0; argv[i]; i++)
        if (!strcmp(argv[i], arg))
            return i;
    return -1;
}

static int count_prefix(char **argv, const char *prefix)
{
    int n = 0;
    for (int i = 0; argv[i]; i++)
        n += !strncmp(argv[i], prefix, strlen(prefix));
    return n;
}

static void test_the_command_runs_in_the_image_with_its_env_file_mounts_and_limits(void **state)
{
    (void)state;
    char *command[] = {"python3", "train.py", "--lr", "0.1", NULL};
    char *env[] = {"GREETING=hello", "SECRET=s3cr3t"};
    char *mounts[] = {"/datasets:/datasets:ro"};
    int gpus[] = {0, 1};
    struct agent_task_spec spec = {.job_id = 7, .attempt = 2, .command = command, .env = env,
                                   .nenv = 2, .gpus = gpus, .ngpus = 2, .memory_mib = 2048,
                                   .cpus = 4, .checkpoint_dir = "/data/checkpoints/7",
                                   .image = "localhost/tide-test:1", .mounts = mounts,
                                   .nmounts = 1};
    char name[AGENT_CONTAINER_NAME_MAX];
    agent_container_name(7, 2, name, sizeof name);
    assert_string_equal(name, "tide-7-2");
    char **argv =
        agent_container_task_argv(&spec, "podman", name, "/work", "/work/jobs/7", "/dev/fd/9");
    assert_non_null(argv);
    assert_string_equal(argv[0], "podman");
    assert_string_equal(argv[1], "run");
    assert_true(find(argv, "--rm") > 0 && find(argv, "--init") > 0);
    assert_true(find(argv, "--name=tide-7-2") > 0);
    assert_true(find(argv, "--network=host") > 0);
    assert_true(find(argv, "--label=tide.agent=/work") > 0);
    /* values stay out of the command line (ps shows it): in the env file */
    assert_true(find(argv, "--env-file=/dev/fd/9") > 0);
    assert_int_equal(count_prefix(argv, "--env="), 0);
    for (int i = 0; argv[i]; i++)
        assert_null(strstr(argv[i], "s3cr3t"));
    /* no privilege is gained inside, from setuid files or otherwise */
    assert_true(find(argv, "--security-opt=no-new-privileges") > 0);
    assert_true(find(argv, "--volume=/work/jobs/7:/work/jobs/7") > 0);
    assert_true(find(argv, "--volume=/data/checkpoints/7:/data/checkpoints/7") > 0);
    assert_true(find(argv, "--volume=/datasets:/datasets:ro") > 0);
    assert_true(find(argv, "--workdir=/work/jobs/7") > 0);
    assert_true(find(argv, "--memory=2048m") > 0 && find(argv, "--cpus=4") > 0);
    /* the image, then the job's argv unchanged, last */
    int image = find(argv, "localhost/tide-test:1");
    assert_true(image > 0);
    for (int i = 0; command[i]; i++)
        assert_string_equal(argv[image + 1 + i], command[i]);
    assert_null(argv[image + 5]);
    /* everything before the image is a flag: nothing of the job's can be read as one */
    for (int i = 2; i < image; i++)
        assert_true(argv[i][0] == '-');
    agent_container_argv_free(argv);
}

static void test_a_job_user_gets_no_capabilities_and_root_keeps_the_runtimes(void **state)
{
    (void)state;
    char *command[] = {"id", NULL};
    struct agent_container_run r = {.runtime = "podman", .name = "tide-1-1", .image = "img:1",
                                    .command = command, .job_dir = "/j", .user = "65534:65534"};
    char **argv = agent_container_argv(&r);
    assert_non_null(argv);
    assert_true(find(argv, "--user=65534:65534") > 0);
    assert_true(find(argv, "--cap-drop=ALL") > 0);
    assert_true(find(argv, "--security-opt=no-new-privileges") > 0);
    agent_container_argv_free(argv);
    r.user = "0:0"; /* --allow-root-jobs: root's, as the operator allowed */
    argv = agent_container_argv(&r);
    assert_non_null(argv);
    assert_int_equal(count_prefix(argv, "--cap-drop"), 0);
    assert_true(find(argv, "--security-opt=no-new-privileges") > 0);
    agent_container_argv_free(argv);
}

static void test_the_env_file_holds_every_variable_and_refuses_a_newline(void **state)
{
    (void)state;
    char *env[] = {"SECRET=s3 cr=3t", "EMPTY="};
    char *vars[] = {"TIDE_JOB_ID=7"};
    char why[256] = "";
    int fd = agent_task_env_file(env, 2, vars, 1, why, sizeof why);
    assert_true(fd >= 0);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC); /* only the runtime it is given to gets it */
    char path[32], got[256] = "";
    snprintf(path, sizeof path, "/dev/fd/%d", fd); /* read as the runtime reads it */
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(got, 1, sizeof got - 1, f);
    fclose(f);
    close(fd);
    got[n] = '\0';
    assert_string_equal(got, "SECRET=s3 cr=3t\nEMPTY=\nTIDE_JOB_ID=7\n");
    char *bad[] = {"CERT=line1\nline2"};
    assert_int_equal(agent_task_env_file(bad, 1, NULL, 0, why, sizeof why), -1);
    assert_string_equal(why, "env CERT: a value with a newline cannot be passed into a container");
}

static void test_gpus_are_device_nodes_when_they_exist_and_none_for_fake_gpus(void **state)
{
    (void)state;
    char *command[] = {"true", NULL};
    int gpus[] = {1, 3};
    struct agent_container_run r = {.runtime = "docker", .name = "tide-1-1", .image = "img:1",
                                    .command = command, .job_dir = "/j", .gpus = gpus,
                                    .ngpus = 2, .dev_dir = dir, .cdi_dirs = sub("cdi")};
    char **argv = agent_container_argv(&r);
    assert_non_null(argv);
    assert_int_equal(count_prefix(argv, "--device"), 0); /* fake GPUs: no device nodes */
    agent_container_argv_free(argv);

    touch("nvidia0");
    touch("nvidia1");
    touch("nvidia3");
    touch("nvidiactl");
    touch("nvidia-uvm");
    argv = agent_container_argv(&r);
    char want[300];
    snprintf(want, sizeof want, "--device=%s/nvidia1", dir);
    assert_true(find(argv, want) > 0);
    snprintf(want, sizeof want, "--device=%s/nvidia3", dir);
    assert_true(find(argv, want) > 0);
    snprintf(want, sizeof want, "--device=%s/nvidia0", dir);
    assert_int_equal(find(argv, want), -1); /* not the job's */
    snprintf(want, sizeof want, "--device=%s/nvidiactl", dir);
    assert_true(find(argv, want) > 0);
    assert_int_equal(count_prefix(argv, "--device"), 4);
    agent_container_argv_free(argv);

    /* with an NVIDIA CDI spec installed, the GPUs are CDI devices */
    assert_int_equal(mkdir(sub("cdi"), 0755), 0);
    touch("cdi/nvidia.yaml");
    argv = agent_container_argv(&r);
    assert_true(find(argv, "--device=nvidia.com/gpu=1") > 0);
    assert_true(find(argv, "--device=nvidia.com/gpu=3") > 0);
    assert_int_equal(count_prefix(argv, "--device"), 2);
    agent_container_argv_free(argv);
}

/* tide numbers MIG instances after the whole GPUs: on a board of two
 * instances, instance index 1 would be nvidia-ctk's whole GPU 1. */
static void test_a_mig_instance_is_its_cdi_device_by_uuid(void **state)
{
    (void)state;
    char *command[] = {"true", NULL};
    int gpus[] = {0, 2};
    int minors[] = {0, -1};
    char *uuids[] = {"GPU-5e0b1fa2-0000-0000-0000-000000000000",
                     "MIG-1d8f3c2a-1111-2222-3333-444444444444"};
    assert_int_equal(mkdir(sub("cdi"), 0755), 0);
    touch("cdi/nvidia.json");
    struct agent_container_run r = {.runtime = "podman",
                                    .name = "tide-1-1",
                                    .image = "img:1",
                                    .command = command,
                                    .job_dir = "/j",
                                    .gpus = gpus,
                                    .gpu_minors = minors,
                                    .gpu_uuids = uuids,
                                    .ngpus = 2,
                                    .dev_dir = dir,
                                    .cdi_dirs = sub("cdi")};
    char **argv = agent_container_argv(&r);
    assert_non_null(argv);
    assert_true(find(argv, "--device=nvidia.com/gpu=0") > 0);
    assert_true(find(argv, "--device=nvidia.com/gpu=MIG-1d8f3c2a-1111-2222-3333-444444444444") > 0);
    assert_int_equal(find(argv, "--device=nvidia.com/gpu=2"), -1);
    assert_int_equal(count_prefix(argv, "--device"), 2);
    agent_container_argv_free(argv);
}

static void test_runtime_exits_125_to_127_are_start_failures(void **state)
{
    (void)state;
    char why[200];
    assert_true(agent_container_start_failure("podman", 125, why, sizeof why));
    assert_string_equal(why, "start failed: podman exit 125: could not create the container (see "
                             "the job's log: an image it cannot pull, a bad mount, ...)");
    assert_true(agent_container_start_failure("docker", 127, why, sizeof why));
    assert_non_null(strstr(why, "not in the image"));
    assert_false(agent_container_start_failure("podman", 0, why, sizeof why));
    assert_false(agent_container_start_failure("podman", 1, why, sizeof why));
    assert_false(agent_container_start_failure("podman", 137, why, sizeof why));
}

/* Runs last: the scope is the process's from here on. */
static void test_container_names_are_this_agents_own_by_node_and_work_dir(void **state)
{
    (void)state;
    char a1[AGENT_CONTAINER_NAME_MAX], a2[AGENT_CONTAINER_NAME_MAX], b[AGENT_CONTAINER_NAME_MAX];
    agent_container_set_scope("gpu node/1", "/srv/tide-a");
    agent_container_name(7, 2, a1, sizeof a1);
    /* characters a runtime refuses become '_', then 8 hex digits */
    assert_int_equal(strncmp(a1, "tide-gpu_node_1-", 16), 0);
    assert_int_equal(strlen(a1), strlen("tide-gpu_node_1-01234567-7-2"));
    assert_string_equal(a1 + 24, "-7-2");
    for (int i = 16; i < 24; i++)
        assert_non_null(strchr("0123456789abcdef", a1[i]));
    /* the same agent started again: the same name */
    agent_container_set_scope("gpu node/1", "/srv/tide-a");
    agent_container_name(7, 2, a2, sizeof a2);
    assert_string_equal(a1, a2);
    /* another agent with the same node name (another cluster): another name */
    agent_container_set_scope("gpu node/1", "/srv/tide-b");
    agent_container_name(7, 2, b, sizeof b);
    assert_string_not_equal(a1, b);
    /* a long node name is cut; the whole name still fits */
    agent_container_set_scope("a-very-long-node-name-that-goes-on-and-on-and-on", "/w");
    agent_container_name(INT64_MAX, INT64_MAX, b, sizeof b);
    assert_int_equal(strncmp(b, "tide-a-very-long-node-name-th-", 30), 0);
    char want[64];
    snprintf(want, sizeof want, "-%lld-%lld", (long long)INT64_MAX, (long long)INT64_MAX);
    assert_string_equal(b + strlen(b) - strlen(want), want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_command_runs_in_the_image_with_its_env_file_mounts_and_limits),
        cmocka_unit_test(test_a_job_user_gets_no_capabilities_and_root_keeps_the_runtimes),
        cmocka_unit_test(test_the_env_file_holds_every_variable_and_refuses_a_newline),
        cmocka_unit_test(test_runtime_exits_125_to_127_are_start_failures),
        cmocka_unit_test_setup_teardown(
            test_gpus_are_device_nodes_when_they_exist_and_none_for_fake_gpus, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_mig_instance_is_its_cdi_device_by_uuid, setup,
                                        teardown),
        cmocka_unit_test(test_container_names_are_this_agents_own_by_node_and_work_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
