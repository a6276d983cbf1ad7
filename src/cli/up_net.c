/* Loopback port checks and the health probe for `tide up` (see up_net.h). */
#include "cli/up_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/http_client.h"

/* Binds a TCP socket to 127.0.0.1:port; returns the fd or -errno. */
static int bind_loopback(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    /* Like a server would, so a port in TIME_WAIT does not count as taken. */
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, 1) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    return fd;
}

int up_net_free_port(struct tide_err *err)
{
    int fd = bind_loopback(0);
    if (fd < 0)
        return tide_err_set(err, TIDE_EIO, NULL, "cannot find a free port: %s", strerror(-fd));
    struct sockaddr_in addr;
    socklen_t len = sizeof addr;
    int rc = getsockname(fd, (struct sockaddr *)&addr, &len);
    int e = errno;
    close(fd);
    if (rc != 0)
        return tide_err_set(err, TIDE_EIO, NULL, "cannot find a free port: %s", strerror(e));
    return ntohs(addr.sin_port);
}

int up_net_port_free(int port)
{
    int fd = bind_loopback(port);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

int up_net_healthy(const char *base_url, long timeout_ms)
{
    char url[512];
    if (snprintf(url, sizeof url, "%s/healthz", base_url) >= (int)sizeof url)
        return 0;
    struct http_response resp;
    if (http_request("GET", url, NULL, NULL, timeout_ms, &resp, NULL) != 0)
        return 0;
    int ok = resp.status == 200;
    http_response_release(&resp);
    return ok;
}
