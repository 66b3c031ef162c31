// C shim for the few Linux calls Swift cannot reach directly: _GNU_SOURCE declarations
// and variadic functions (ioctl). Each function is a thin pass-through returning -1/errno.
#ifndef CNIMBUS_H
#define CNIMBUS_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/xattr.h>  /* lgetxattr & co.: not in Swift's Glibc module */
#include <sys/fsuid.h>  /* setfsuid: lets tests drop file-access privileges on one thread */
#include <malloc.h>     /* malloc_trim, mallopt: not in Swift's Glibc module */

/// renameat2(2). flags: CNIMBUS_RENAME_NOREPLACE, CNIMBUS_RENAME_EXCHANGE.
int cnimbus_renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags);
extern const unsigned int CNIMBUS_RENAME_NOREPLACE;
extern const unsigned int CNIMBUS_RENAME_EXCHANGE;

/// copy_file_range(2) with explicit offsets; returns bytes copied or -1.
ssize_t cnimbus_copy_file_range(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out, size_t len);

/// ioctl(dest, FICLONE, src): reflink the whole file. Returns 0 or -1.
int cnimbus_ficlone(int dest_fd, int src_fd);

/// getsockopt(SO_PEERCRED): the peer's pid, uid and gid. Returns 0 or -1.
int cnimbus_peercred(int fd, int32_t *pid, uint32_t *uid, uint32_t *gid);

/// posix_spawnp(3) for a program run on the user's behalf: it gets stdin, stdout and stderr
/// only (every other descriptor is closed in the child), default signal actions and an
/// empty signal mask. Returns 0 or an errno value.
int cnimbus_spawnp(pid_t *pid, const char *file, char *const argv[], char *const envp[]);
/* posix_spawnp as above, with the descriptor `passed` given to the child as descriptor 3
   (sd_listen_fds(3)'s first); every other descriptor above 2 is closed. */
int cnimbus_spawnp_passing(pid_t *pid, const char *file, char *const argv[], char *const envp[], int passed);
/* One datagram to the socket at `path` (a leading '@' means the abstract namespace) carrying
   the descriptor `fd` (SCM_RIGHTS), never waiting: systemd's FDSTORE=1. */
ssize_t cnimbus_send_with_descriptor(int socket_fd, const void *bytes, size_t count, int fd, const char *path);
/* One datagram into `bytes`; `*fd` is the descriptor it carried (close-on-exec), or -1. */
ssize_t cnimbus_receive_with_descriptor(int socket_fd, void *bytes, size_t count, int *fd);

/// syncfs(2): flush one filesystem.
int cnimbus_syncfs(int fd);

/// setxattrat(2) and getxattrat(2) with AT_SYMLINK_NOFOLLOW: the extended attribute `name` of
/// the entry `path` of the directory `dirfd`, a final symlink not followed. Linux 6.13 and
/// later; ENOSYS before (EPERM under a seccomp filter that does not know them).
int cnimbus_setxattrat(int dirfd, const char *path, const char *name, const void *value, size_t size);
ssize_t cnimbus_getxattrat(int dirfd, const char *path, const char *name, void *value, size_t size);

/// openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS: the path may
/// not leave dirfd nor pass through any symlink. Returns the fd or -1 (ENOSYS on old kernels).
int cnimbus_openat_beneath(int dirfd, const char *path, int flags, unsigned int mode);

/// inotify event header layout, so Swift can parse the byte stream without guessing.
extern const size_t CNIMBUS_INOTIFY_EVENT_SIZE;

/// open(2) flags that need _GNU_SOURCE.
extern const int CNIMBUS_O_PATH;
extern const int CNIMBUS_O_NOATIME;
extern const int CNIMBUS_O_TMPFILE;
/// lseek(2) whences that need _GNU_SOURCE: the next data, the next hole (sparse files).
extern const int CNIMBUS_SEEK_DATA;
extern const int CNIMBUS_SEEK_HOLE;

/// fcntl(F_SETLEASE, F_RDLCK) then F_UNLCK: 1 when a read lease could be taken (nobody has
/// the file open for writing), 0 when it could not for that reason, -1 when leases are not
/// possible here (errno says why).
int cnimbus_probe_read_lease(int fd);

/// fcntl(F_SETLEASE, F_WRLCK) then F_UNLCK, on a descriptor opened read-only: 1 when a write
/// lease could be taken (nobody else has the file open at all, reading or writing), 0 when it
/// could not for that reason, -1 when leases are not possible here (errno says why).
int cnimbus_probe_write_lease(int fd);

/// pipe2(fds, O_CLOEXEC).
int cnimbus_pipe_cloexec(int fds[2]);

/// accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK): Swift's Glibc module lacks accept4.
int cnimbus_accept_cloexec_nonblock(int fd);

/* ---- fanotify pre-content events (Linux 6.14) and capabilities ----
 * Debian 12's headers predate the pre-content hooks: the values below are those of the
 * kernel's include/uapi/linux/fanotify.h (6.14 to 6.18), defined only where the system
 * headers lack them. */
#include <linux/fanotify.h>

#ifndef FAN_PRE_ACCESS
#define FAN_PRE_ACCESS 0x00100000  /* pre-content access hook (read, write, truncate, punch) */
#endif
#ifndef FAN_EVENT_INFO_TYPE_RANGE
#define FAN_EVENT_INFO_TYPE_RANGE 6
#endif
#ifndef FAN_REPORT_FD_ERROR
#define FAN_REPORT_FD_ERROR 0x00002000
#endif
#ifndef FAN_ERRNO_BITS
#define FAN_ERRNO_BITS 8
#define FAN_ERRNO_SHIFT (32 - FAN_ERRNO_BITS)
#define FAN_ERRNO_MASK ((1 << FAN_ERRNO_BITS) - 1)
#endif
#ifndef FAN_INFO
#define FAN_INFO 0x20
#endif
#ifndef FAN_RESPONSE_INFO_NONE
#define FAN_RESPONSE_INFO_NONE 0
#define FAN_RESPONSE_INFO_AUDIT_RULE 1
#endif

/// The info record that follows a FAN_PRE_ACCESS event: the byte range about to be accessed.
/// Layout of the kernel's `struct fanotify_event_info_range` (24 bytes).
struct cnimbus_fanotify_range {
    uint8_t info_type;
    uint8_t pad0;
    uint16_t len;
    uint32_t pad;
    uint64_t offset;
    uint64_t count;
};

/// FAN_DENY_ERRNO(error): a deny response that makes the access fail with `error` (only EIO,
/// EPERM, EBUSY, ETXTBSY, EAGAIN, ENOSPC and EDQUOT are accepted, and only from a
/// FAN_CLASS_PRE_CONTENT group). The macro is function-like, so Swift cannot import it.
static inline uint32_t cnimbus_fan_deny_errno(int error) {
    return FAN_DENY | ((((uint32_t)error) & FAN_ERRNO_MASK) << FAN_ERRNO_SHIFT);
}

/// fanotify_init(2). Returns the group's descriptor or -1.
int cnimbus_fanotify_init(unsigned int flags, unsigned int event_f_flags);

/// fanotify_mark(2); `path` NULL marks the file `dirfd` is open on (not an O_PATH one). Returns 0 or -1.
int cnimbus_fanotify_mark(int fanotify_fd, unsigned int flags, uint64_t mask, int dirfd, const char *path);

/// fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length). Returns 0 or -1.
int cnimbus_punch_hole(int fd, int64_t offset, int64_t length);

/// fremovexattr(2) (not in Swift's Glibc module). Returns 0 or -1.
int cnimbus_fremovexattr(int fd, const char *name);

/// capget(2) / capset(2) on the calling thread with _LINUX_CAPABILITY_VERSION_3: each set is
/// two 32-bit words (capabilities 0-31, then 32-63). Return 0 or -1.
int cnimbus_capget(uint32_t effective[2], uint32_t permitted[2], uint32_t inheritable[2]);
int cnimbus_capset(const uint32_t effective[2], const uint32_t permitted[2], const uint32_t inheritable[2]);

/// prctl(2) with its four arguments (variadic in C). Returns prctl's result or -1.
int cnimbus_prctl(int option, unsigned long arg2, unsigned long arg3, unsigned long arg4, unsigned long arg5);

/// prctl options and the capability number Nimbus names.
extern const int CNIMBUS_PR_CAPBSET_DROP;
extern const int CNIMBUS_PR_CAPBSET_READ;
extern const int CNIMBUS_PR_CAP_AMBIENT;
extern const unsigned long CNIMBUS_PR_CAP_AMBIENT_CLEAR_ALL;
extern const int CNIMBUS_PR_SET_NO_NEW_PRIVS;
extern const int CNIMBUS_PR_GET_NO_NEW_PRIVS;
extern const int CNIMBUS_PR_SET_DUMPABLE;
extern const int CNIMBUS_PR_GET_DUMPABLE;
extern const int CNIMBUS_CAP_SYS_ADMIN;
/// fstatfs(2)'s f_type (the filesystem's magic number) of fd, in *type; 0 or -1 with errno.
int cnimbus_fstatfs_type(int fd, long long *type);

#endif
