/*
 * Entry points of every `tide` subcommand. One command serves every role;
 * main.c dispatches on argv[1] and each role lives in its own folder. The
 * client commands and agent_main are linked into the executable;
 * server_main and cli_up_main are in tide-roles.so, loaded only for them
 * (roles_module.h): a client command or the agent must not call into
 * src/server, src/store or src/providers, or `tide` no longer links.
 * Each returns the process exit status (0 success, 1 failure, 2 bad usage).
 */
#ifndef TIDE_ROLES_H
#define TIDE_ROLES_H

int server_main(int argc, char **argv); /* src/server/server_main.c */
int agent_main(int argc, char **argv);  /* src/agent/agent_main.c */

int cli_up_main(int argc, char **argv);     /* src/cli/cmd_up.c */
int cli_submit_main(int argc, char **argv); /* src/cli/cmd_submit.c */
int cli_jobs_main(int argc, char **argv);   /* src/cli/cmd_jobs.c */
int cli_show_main(int argc, char **argv);   /* src/cli/cmd_show.c */
int cli_cancel_main(int argc, char **argv); /* src/cli/cmd_cancel.c */
int cli_logs_main(int argc, char **argv);   /* src/cli/cmd_logs.c */
int cli_nodes_main(int argc, char **argv);  /* src/cli/cmd_nodes.c */
int cli_pools_main(int argc, char **argv);  /* src/cli/cmd_pools.c */
int cli_token_main(int argc, char **argv);  /* src/cli/cmd_token.c */
int cli_queues_main(int argc, char **argv); /* src/cli/cmd_queues.c */
int cli_usage_main(int argc, char **argv);  /* src/cli/cmd_usage.c */
int cli_events_main(int argc, char **argv); /* src/cli/cmd_events.c */
int cli_sim_main(int argc, char **argv);    /* src/cli/cmd_sim.c */
int cli_hold_main(int argc, char **argv);    /* src/cli/cmd_hold.c */
int cli_release_main(int argc, char **argv); /* src/cli/cmd_hold.c */
int cli_requeue_main(int argc, char **argv); /* src/cli/cmd_hold.c */
int cli_top_main(int argc, char **argv);     /* src/cli/cmd_top.c */

#endif
