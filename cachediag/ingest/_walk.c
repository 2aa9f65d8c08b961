/* The folder walk of cachediag.ingest.walk, compiled.
 *
 * A history of 10,000 session files spent more on listing them in Python (a DirEntry and
 * a stat_result of 19 fields per file, before any worker process starts) than on
 * grouping them into sessions. This lists a tree with readdir and one fstatat per
 * *.jsonl file and hands back only what discovery keeps: each folder, each file's name,
 * size and modification time. walk.py_list_tree is its Python twin and the one to read
 * first; tests/test_walk.py holds the two to the same answers.
 *
 * POSIX only (dirent.h, fstatat): setup.py builds it nowhere else, and marks it optional.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#define WALK_API 1 /* walk.py loads only the API it was written for */

/* st_mtime as os.stat gives it (posixmodule.c, fill_time): seconds plus nanoseconds. */
static PyObject *
mtime_of(const struct stat *st)
{
#if defined(__APPLE__)
    return PyFloat_FromDouble((double)st->st_mtimespec.tv_sec +
                              (double)st->st_mtimespec.tv_nsec * 1e-9);
#else
    return PyFloat_FromDouble((double)st->st_mtim.tv_sec + (double)st->st_mtim.tv_nsec * 1e-9);
#endif
}

static int
append_new(PyObject *list, PyObject *item)
{
    if (item == NULL)
        return -1;
    int rc = PyList_Append(list, item);
    Py_DECREF(item);
    return rc;
}

static int
ends_with_jsonl(const char *name, size_t len)
{
    return len >= 6 && memcmp(name + len - 6, ".jsonl", 6) == 0;
}

/* (size, mtime) of a file, or None when the stat fails: it vanished since the listing. */
static PyObject *
stat_pair(const struct stat *st, int ok)
{
    if (!ok)
        Py_RETURN_NONE;
    PyObject *size = PyLong_FromLongLong((long long)st->st_size);
    PyObject *mtime = mtime_of(st);
    if (size == NULL || mtime == NULL) {
        Py_XDECREF(size);
        Py_XDECREF(mtime);
        return NULL;
    }
    PyObject *pair = PyTuple_Pack(2, size, mtime);
    Py_DECREF(size);
    Py_DECREF(mtime);
    return pair;
}

/* Why an entry's stat can fail that means it is no file to read: gone since the listing,
 * a link to nothing, a link loop. Any other failure (no permission, a name too long)
 * leaves the folder's listing incomplete, which is reported (walk.py's _NOT_THERE): the first such errno is kept. */
static void
lookup_failed(int *failed, int err)
{
    if (err != ENOENT && err != ENOTDIR && err != ELOOP && !*failed)
        *failed = err;
}

/* One folder's entries: subfolders to `dirs` (as (index of this folder, name)), *.jsonl
 * regular files to `files` (as (index, name, stat)); `failed` is the errno of a listing
 * that failed (0 if none). -1 on a Python error (memory), else 0. */
static int
list_folder(const char *path, Py_ssize_t index, PyObject *dirs, PyObject *files, int *failed)
{
    *failed = 0;
    DIR *dir = opendir(path);
    if (dir == NULL) {
        *failed = errno ? errno : EIO;
        return 0;
    }
    int fd = dirfd(dir);
    int rc = 0;
    for (;;) {
        errno = 0;
        struct dirent *entry = readdir(dir);
        if (entry == NULL) {
            if (errno && !*failed)
                *failed = errno; /* the entries before the error stay listed */
            break;
        }
        const char *name = entry->d_name;
        if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')))
            continue;
        size_t len = strlen(name);
        unsigned char type = entry->d_type;
        struct stat st;
        int have_lstat = 0;
        if (type == DT_UNKNOWN) { /* a filesystem that does not say: ask, not following */
            if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
                lookup_failed(failed, errno);
                continue;
            }
            have_lstat = 1;
            if (S_ISDIR(st.st_mode))
                type = DT_DIR;
            else if (S_ISLNK(st.st_mode))
                type = DT_LNK;
            else if (S_ISREG(st.st_mode))
                type = DT_REG;
        }
        if (type == DT_DIR) {
            PyObject *text = PyUnicode_DecodeFSDefaultAndSize(name, (Py_ssize_t)len);
            PyObject *row = text == NULL ? NULL : Py_BuildValue("(nN)", index, text);
            if (append_new(dirs, row) < 0) {
                rc = -1;
                break;
            }
            continue;
        }
        if (!ends_with_jsonl(name, len))
            continue;
        PyObject *pair;
        if (type == DT_REG) {
            /* As DirEntry.stat(); a regular file that vanished is kept, without one. */
            int ok = have_lstat || fstatat(fd, name, &st, 0) == 0;
            pair = stat_pair(&st, ok);
        } else if (type == DT_LNK) {
            /* DirEntry.is_file(): the link's target must be a regular file. */
            if (fstatat(fd, name, &st, 0) != 0) {
                lookup_failed(failed, errno);
                continue;
            }
            if (!S_ISREG(st.st_mode))
                continue;
            pair = stat_pair(&st, 1);
        } else {
            continue; /* a socket, a fifo, a device: not a file to read */
        }
        if (pair == NULL) {
            rc = -1;
            break;
        }
        PyObject *text = PyUnicode_DecodeFSDefaultAndSize(name, (Py_ssize_t)len);
        if (text == NULL) {
            Py_DECREF(pair);
            rc = -1;
            break;
        }
        PyObject *row = Py_BuildValue("(nNN)", index, text, pair);
        if (append_new(files, row) < 0) {
            rc = -1;
            break;
        }
    }
    closedir(dir);
    return rc;
}

PyDoc_STRVAR(list_tree_doc,
"list_tree(root) -> (dirs, files, errors)\n\n"
"Every folder below root, links not followed: dirs[0] is root as (-1, ''), each other\n"
"one (index of its parent in dirs, name). files: every *.jsonl regular file (a link to\n"
"one counts) as (index of its folder, name, (st_size, st_mtime) or None when its stat\n"
"failed). errors: (index of a folder, first errno) for each folder that could not be\n"
"listed, or not wholly (an entry that could not be told a folder or a file, for a reason\n"
"other than not being there, is left out). Unsorted; as walk.py_list_tree gives them.");

static PyObject *
list_tree(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *root_bytes = NULL;
    if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &root_bytes))
        return NULL;
    PyObject *dirs = PyList_New(0), *files = PyList_New(0), *errors = PyList_New(0);
    PyObject *paths = PyList_New(0); /* each folder's path as bytes, by index */
    PyObject *result = NULL;
    if (dirs == NULL || files == NULL || errors == NULL || paths == NULL)
        goto done;
    PyObject *top = Py_BuildValue("(ns)", (Py_ssize_t)-1, "");
    if (append_new(dirs, top) < 0 || PyList_Append(paths, root_bytes) < 0)
        goto done;
    for (Py_ssize_t index = 0; index < PyList_GET_SIZE(dirs); index++) {
        if (index > 0) { /* its path: its parent's, a slash, its name */
            PyObject *row = PyList_GET_ITEM(dirs, index);
            Py_ssize_t parent = PyLong_AsSsize_t(PyTuple_GET_ITEM(row, 0));
            PyObject *name = PyUnicode_EncodeFSDefault(PyTuple_GET_ITEM(row, 1));
            if (name == NULL)
                goto done;
            const char *above = PyBytes_AS_STRING(PyList_GET_ITEM(paths, parent));
            PyObject *joined = PyBytes_FromFormat("%s/%s", above, PyBytes_AS_STRING(name));
            Py_DECREF(name);
            if (append_new(paths, joined) < 0)
                goto done;
        }
        int failed = 0;
        const char *path = PyBytes_AS_STRING(PyList_GET_ITEM(paths, index));
        if (list_folder(path, index, dirs, files, &failed) < 0)
            goto done;
        if (failed && append_new(errors, Py_BuildValue("(ni)", index, failed)) < 0)
            goto done;
        if (PyErr_CheckSignals() < 0) /* Ctrl-C on a large tree: between two folders */
            goto done;
    }
    result = PyTuple_Pack(3, dirs, files, errors);
done:
    Py_XDECREF(root_bytes);
    Py_XDECREF(dirs);
    Py_XDECREF(files);
    Py_XDECREF(errors);
    Py_XDECREF(paths);
    return result;
}

static PyMethodDef walk_methods[] = {
    {"list_tree", list_tree, METH_VARARGS, list_tree_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef walk_module = {
    PyModuleDef_HEAD_INIT, "_walk", "Compiled folder walk (see walk.py).", -1, walk_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__walk(void)
{
    PyObject *module = PyModule_Create(&walk_module);
    if (module != NULL && PyModule_AddIntConstant(module, "API", WALK_API) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
