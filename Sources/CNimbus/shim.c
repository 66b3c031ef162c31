#define _GNU_SOURCE
#include "CNimbus.h"
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/inotify.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <string.h>
#include <signal.h>
#include <spawn.h>
#include <sys/vfs.h>

const unsigned int CNIMBUS_RENAME_NOREPLACE = RENAME_NOREPLACE;
const unsigned int CNIMBUS_RENAME_EXCHANGE = RENAME_EXCHANGE;
const size_t CNIMBUS_INOTIFY_EVENT_SIZE = sizeof(struct inotify_event);

int cnimbus_renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags) {
    return renameat2(olddirfd, oldpath, newdirfd, newpath, flags);
}

ssize_t cnimbus_copy_file_range(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out, size_t len) {
    loff_t in = *off_in, out = *off_out;
    ssize_t n = copy_file_range(fd_in, &in, fd_out, &out, len, 0);
    *off_in = in;
    *off_out = out;
    return n;
}

int cnimbus_ficlone(int dest_fd, int src_fd) {
    return ioctl(dest_fd, FICLONE, src_fd);
}

int cnimbus_peercred(int fd, int32_t *pid, uint32_t *uid, uint32_t *gid) {
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
    *pid = cred.pid;
    *uid = cred.uid;
    *gid = cred.gid;
    return 0;
}

int cnimbus_syncfs(int fd) {
    return syncfs(fd);
}

/* setxattrat(2) and getxattrat(2) (Linux 6.13) have the same number on every architecture;
   older C headers do not name them. */
#ifndef __NR_setxattrat
#define __NR_setxattrat 463
#endif
#ifndef __NR_getxattrat
#define __NR_getxattrat 464
#endif

/* struct xattr_args of <linux/xattr.h>, which older headers lack. */
struct cnimbus_xattr_args {
    unsigned long long value;
    unsigned int size;
    unsigned int flags;
};

int cnimbus_setxattrat(int dirfd, const char *path, const char *name, const void *value, size_t size) {
    struct cnimbus_xattr_args args = { (unsigned long long)(uintptr_t)value, (unsigned int)size, 0 };
    return (int)syscall(__NR_setxattrat, dirfd, path, AT_SYMLINK_NOFOLLOW, name, &args, sizeof(args));
}

ssize_t cnimbus_getxattrat(int dirfd, const char *path, const char *name, void *value, size_t size) {
    struct cnimbus_xattr_args args = { (unsigned long long)(uintptr_t)value, (unsigned int)size, 0 };
    return (ssize_t)syscall(__NR_getxattrat, dirfd, path, AT_SYMLINK_NOFOLLOW, name, &args, sizeof(args));
}

int cnimbus_openat_beneath(int dirfd, const char *path, int flags, unsigned int mode) {
    struct open_how how;
    memset(&how, 0, sizeof(how));
    how.flags = (uint64_t)flags;
    /* O_TMPFILE includes O_DIRECTORY: test all its bits, or every O_DIRECTORY open gets a mode (EINVAL). */
    how.mode = ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

const int CNIMBUS_O_PATH = O_PATH;
const int CNIMBUS_O_NOATIME = O_NOATIME;
const int CNIMBUS_O_TMPFILE = O_TMPFILE;
const int CNIMBUS_SEEK_DATA = SEEK_DATA;
const int CNIMBUS_SEEK_HOLE = SEEK_HOLE;

int cnimbus_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

int cnimbus_accept_cloexec_nonblock(int fd) {
    return accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
}

int cnimbus_probe_read_lease(int fd) {
    if (fcntl(fd, F_SETLEASE, F_RDLCK) == 0) {
        fcntl(fd, F_SETLEASE, F_UNLCK);
        return 1;
    }
    return (errno == EAGAIN || errno == EBUSY) ? 0 : -1;
}

int cnimbus_probe_write_lease(int fd) {
    if (fcntl(fd, F_SETLEASE, F_WRLCK) == 0) {
        fcntl(fd, F_SETLEASE, F_UNLCK);
        return 1;
    }
    return (errno == EAGAIN || errno == EBUSY) ? 0 : -1;
}

int cnimbus_spawnp_passing(pid_t *pid, const char *file, char *const argv[], char *const envp[], int passed) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    posix_spawn_file_actions_init(&actions);
    if (passed >= 0) {
        /* dup2 onto itself clears close-on-exec (POSIX 2024, glibc 2.29). */
        posix_spawn_file_actions_adddup2(&actions, passed, 3);
        posix_spawn_file_actions_addclosefrom_np(&actions, 4);
    } else {
        posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    }
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setsigdefault(&attributes, &all);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    int result = posix_spawnp(pid, file, &actions, &attributes, argv, envp);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return result;
}

int cnimbus_spawnp(pid_t *pid, const char *file, char *const argv[], char *const envp[]) {
    return cnimbus_spawnp_passing(pid, file, argv, envp, -1);
}

#include <sys/un.h>
#include <string.h>

ssize_t cnimbus_send_with_descriptor(int socket_fd, const void *bytes, size_t count, int fd, const char *path) {
    struct sockaddr_un address = { .sun_family = AF_UNIX };
    size_t length = strlen(path);
    if (length == 0 || length >= sizeof(address.sun_path)) { errno = EINVAL; return -1; }
    memcpy(address.sun_path, path, length);
    if (path[0] == '@') address.sun_path[0] = 0;
    struct iovec vector = { .iov_base = (void *)bytes, .iov_len = count };
    union { struct cmsghdr header; char space[CMSG_SPACE(sizeof(int))]; } control;
    memset(&control, 0, sizeof(control));
    struct msghdr message = {
        .msg_name = &address, .msg_namelen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + length),
        .msg_iov = &vector, .msg_iovlen = 1, .msg_control = control.space, .msg_controllen = sizeof(control.space),
    };
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &fd, sizeof(int));
    return sendmsg(socket_fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
}

ssize_t cnimbus_receive_with_descriptor(int socket_fd, void *bytes, size_t count, int *fd) {
    struct iovec vector = { .iov_base = bytes, .iov_len = count };
    union { struct cmsghdr header; char space[CMSG_SPACE(sizeof(int) * 8)]; } control;
    struct msghdr message = { .msg_iov = &vector, .msg_iovlen = 1, .msg_control = control.space,
                              .msg_controllen = sizeof(control.space) };
    *fd = -1;
    ssize_t received = recvmsg(socket_fd, &message, MSG_CMSG_CLOEXEC);
    if (received < 0) return -1;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        int descriptors = (int)((header->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int i = 0; i < descriptors; i++) {
            int received_fd;
            memcpy(&received_fd, CMSG_DATA(header) + i * sizeof(int), sizeof(int));
            if (*fd < 0) *fd = received_fd; else close(received_fd);
        }
    }
    return received;
}

#include <sys/fanotify.h>
#include <sys/prctl.h>
#include <linux/capability.h>
#include <linux/falloc.h>

int cnimbus_fanotify_init(unsigned int flags, unsigned int event_f_flags) {
    return fanotify_init(flags, event_f_flags);
}

int cnimbus_fanotify_mark(int fanotify_fd, unsigned int flags, uint64_t mask, int dirfd, const char *path) {
    return fanotify_mark(fanotify_fd, flags, mask, dirfd, path);
}

int cnimbus_punch_hole(int fd, int64_t offset, int64_t length) {
    return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length);
}

int cnimbus_fremovexattr(int fd, const char *name) {
    return fremovexattr(fd, name);
}

int cnimbus_capget(uint32_t effective[2], uint32_t permitted[2], uint32_t inheritable[2]) {
    struct __user_cap_header_struct header = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof(data));
    if (syscall(SYS_capget, &header, data) != 0) return -1;
    for (int i = 0; i < 2; i++) {
        effective[i] = data[i].effective;
        permitted[i] = data[i].permitted;
        inheritable[i] = data[i].inheritable;
    }
    return 0;
}

int cnimbus_capset(const uint32_t effective[2], const uint32_t permitted[2], const uint32_t inheritable[2]) {
    struct __user_cap_header_struct header = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[2];
    for (int i = 0; i < 2; i++) {
        data[i].effective = effective[i];
        data[i].permitted = permitted[i];
        data[i].inheritable = inheritable[i];
    }
    return (int)syscall(SYS_capset, &header, data);
}

int cnimbus_prctl(int option, unsigned long arg2, unsigned long arg3, unsigned long arg4, unsigned long arg5) {
    return prctl(option, arg2, arg3, arg4, arg5);
}

const int CNIMBUS_PR_CAPBSET_DROP = PR_CAPBSET_DROP;
const int CNIMBUS_PR_CAPBSET_READ = PR_CAPBSET_READ;
const int CNIMBUS_PR_CAP_AMBIENT = PR_CAP_AMBIENT;
const unsigned long CNIMBUS_PR_CAP_AMBIENT_CLEAR_ALL = PR_CAP_AMBIENT_CLEAR_ALL;
const int CNIMBUS_PR_SET_NO_NEW_PRIVS = PR_SET_NO_NEW_PRIVS;
const int CNIMBUS_PR_SET_DUMPABLE = PR_SET_DUMPABLE;
const int CNIMBUS_PR_GET_DUMPABLE = PR_GET_DUMPABLE;
const int CNIMBUS_PR_GET_NO_NEW_PRIVS = PR_GET_NO_NEW_PRIVS;
const int CNIMBUS_CAP_SYS_ADMIN = CAP_SYS_ADMIN;
int cnimbus_fstatfs_type(int fd, long long *type) {
    struct statfs st;
    if (fstatfs(fd, &st) == -1) return -1;
    *type = (long long)st.f_type;
    return 0;
}
