"""The Debian package: `cpack -G DEB` builds it from the build directory, and
dpkg installs, removes and purges it in a temporary root.

The install is `dpkg --root=R --force-script-chrootless`: the maintainer
scripts run on the host with DPKG_ROOT=R (no chroot, R holds no shell), so
this also checks that they never touch the host's systemd and that they
enable the unit offline inside R.

The package is also checked by lintian (no error, no warning), and its man
pages against the programs' --help.

Needs the built feedd and feedctl ($FEEDD_BUILD_DIR, configured with
-DCMAKE_INSTALL_PREFIX=/usr), cpack, dpkg, dpkg-shlibdeps (dpkg-dev) and
lintian.
"""

import glob
import gzip
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = os.environ.get(
    "FEEDD_SOURCE_DIR",
    os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")))
BUILD_DIR = os.environ.get("FEEDD_BUILD_DIR", "")
CPACK = os.environ.get("CPACK_COMMAND") or shutil.which("cpack")
WANTS_LINK = "etc/systemd/system/multi-user.target.wants/feedd.service"
UNIT_PATH = "usr/lib/systemd/system/feedd.service"
WORKER_UNIT_PATH = "usr/lib/systemd/system/feedd-worker@.service"


def run(cmd, **kwargs):
    env = dict(os.environ)
    # dpkg wants ldconfig and start-stop-daemon on PATH.
    env["PATH"] = env.get("PATH", "/usr/bin:/bin") + ":/usr/sbin:/sbin"
    env.pop("DPKG_ROOT", None)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=env, timeout=240, **kwargs)
    if proc.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s" % (" ".join(cmd), proc.returncode, proc.stdout))
    return proc.stdout


def monitoring_files():
    """Paths of the files under monitoring/, relative to it (may be none)."""
    root = os.path.join(SOURCE_DIR, "monitoring")
    out = []
    for dirpath, _, files in os.walk(root):
        for name in files:
            out.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(out)


class DebTest(unittest.TestCase):
    maxDiff = 4000

    @classmethod
    def setUpClass(cls):
        for tool in ("dpkg", "dpkg-deb", "dpkg-shlibdeps", "lintian"):
            if shutil.which(tool) is None:
                raise AssertionError("%s is missing: apt-get install dpkg-dev lintian "
                                     "(scripts/install-deps.sh)" % tool)
        config = os.path.join(BUILD_DIR, "CPackConfig.cmake")
        if not os.path.exists(config):
            raise AssertionError("no %s: FEEDD_BUILD_DIR must be the build directory" % config)
        cache = open(os.path.join(BUILD_DIR, "CMakeCache.txt")).read()
        if not re.search(r"^CMAKE_INSTALL_PREFIX:PATH=/usr$", cache, re.M):
            raise AssertionError("the build directory must be configured with "
                                 "-DCMAKE_INSTALL_PREFIX=/usr for the package")
        cls.tmp = tempfile.mkdtemp(prefix="feedd-deb-")
        out_dir = os.path.join(cls.tmp, "out")
        cls.cpack_log = run([CPACK, "-G", "DEB", "--config", config, "-B", out_dir])
        debs = glob.glob(os.path.join(out_dir, "feedd_*.deb"))
        if len(debs) != 1:
            raise AssertionError("expected one feedd_*.deb in %s, got %r\n%s"
                                 % (out_dir, debs, cls.cpack_log))
        cls.deb = debs[0]
        cls.info = run(["dpkg-deb", "--info", cls.deb])
        cls.fields = {}
        for line in run(["dpkg-deb", "--field", cls.deb]).splitlines():
            if line and not line[0].isspace():
                key, _, value = line.partition(":")
                cls.fields[key] = value.strip()
        # "-rwxr-xr-x root/root 123 2026-01-01 00:00 ./usr/bin/feedd"
        cls.contents = {}
        for line in run(["dpkg-deb", "--contents", cls.deb]).splitlines():
            parts = line.split(None, 5)
            path = parts[5].split(" -> ")[0]
            cls.contents[path.lstrip(".")] = (parts[0], parts[1])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    # ---- the package itself ----
    def test_control_fields(self):
        f = self.fields
        self.assertEqual(f["Package"], "feedd")
        self.assertRegex(f["Version"], r"^\d+\.\d+\.\d+-1$")
        self.assertEqual(os.path.basename(self.deb),
                         "feedd_%s_%s.deb" % (f["Version"], f["Architecture"]))
        self.assertIn("@", f["Maintainer"])
        self.assertTrue(f["Description"])
        # Computed by dpkg-shlibdeps from the binaries' NEEDED libraries.
        depends = f.get("Depends", "")
        for lib in ("libc6", "libstdc++6", "libsystemd0", "librocksdb", "librdkafka"):
            self.assertIn(lib, depends, "Depends: %s" % depends)

    def test_maintainer_scripts_and_conffiles(self):
        self.assertRegex(self.info, r"conffiles")
        for script in ("postinst", "prerm", "postrm"):
            self.assertRegex(self.info, r"\d+ bytes,\s+\d+ lines\s+\*\s+%s\s" % script)
        control = os.path.join(self.tmp, "control")
        run(["dpkg-deb", "--control", self.deb, control])
        with open(os.path.join(control, "conffiles")) as f:
            self.assertEqual(f.read().split(), ["/etc/feedd/feedd.conf"])
        for script in ("postinst", "prerm", "postrm"):
            mode = stat.S_IMODE(os.stat(os.path.join(control, script)).st_mode)
            self.assertEqual(mode, 0o755, script)
            run(["sh", "-n", os.path.join(control, script)])
            # systemd is reached through deb-systemd-helper / deb-systemd-invoke
            # (as debhelper's snippets do); systemctl only for daemon-reload.
            with open(os.path.join(control, script)) as f:
                for line in f:
                    code = line.split("#", 1)[0]
                    if re.search(r"\bsystemctl\b", code):
                        self.assertIn("daemon-reload", code, "%s: %s" % (script, line))

    def test_lintian_reports_no_error_and_no_warning(self):
        proc = subprocess.run(["lintian", "--no-cfg", "--display-level", ">=warning", self.deb],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=240)
        tags = [line for line in proc.stdout.splitlines() if re.match(r"^[EW]: ", line)]
        self.assertEqual(tags, [], proc.stdout)
        self.assertEqual(proc.returncode, 0, proc.stdout)

    def test_man_pages_are_the_programs_help(self):
        binaries = {"feedd": os.path.join(BUILD_DIR, "feedd"),
                    "feedctl": os.path.join(BUILD_DIR, "feedctl")}
        for name, section in (("feedd", "8"), ("feedctl", "1")):
            path = "/usr/share/man/man%s/%s.%s.gz" % (section, name, section)
            self.assertIn(path, self.contents)
            extracted = os.path.join(self.tmp, "man-" + name)
            run(["dpkg-deb", "-x", self.deb, extracted])
            with gzip.open(extracted + path, "rt") as f:
                page = f.read()
            self.assertRegex(page, r'(?m)^\.TH %s "%s"' % (name.upper(), section))
            # Every option of --help is in the page (roff escapes '-' as '\-').
            help_text = run([binaries[name], "--help"])
            options = set(re.findall(r"(?m)^  (?:-\w, )?(--[\w.-]+)", help_text))
            self.assertGreater(len(options), 3, help_text)
            text = page.replace("\\-", "-").replace("\\fB", "").replace("\\fR", "")
            for option in options:
                self.assertIn(option, text, "%s(%s) lacks %s" % (name, section, option))

    def test_layout(self):
        expected = {
            "/usr/bin/feedd": "-rwxr-xr-x",
            "/usr/bin/feedctl": "-rwxr-xr-x",
            "/etc/feedd/feedd.conf": "-rw-r--r--",
            "/" + UNIT_PATH: "-rw-r--r--",
            "/" + WORKER_UNIT_PATH: "-rw-r--r--",
            "/usr/share/doc/feedd/README.md": "-rw-r--r--",
            "/usr/share/doc/feedd/architecture.md": "-rw-r--r--",
            "/usr/share/doc/feedd/packaging.md": "-rw-r--r--",
            "/usr/share/doc/feedd/copyright": "-rw-r--r--",
            "/usr/share/doc/feedd/changelog.Debian.gz": "-rw-r--r--",
            "/usr/share/man/man8/feedd.8.gz": "-rw-r--r--",
            "/usr/share/man/man1/feedctl.1.gz": "-rw-r--r--",
            "/usr/share/lintian/overrides/feedd": "-rw-r--r--",
        }
        for name in monitoring_files():
            expected["/usr/share/feedd/monitoring/" + name] = "-rw-r--r--"
        for path, mode in expected.items():
            self.assertIn(path, self.contents, "%s is not in the package" % path)
            self.assertEqual(self.contents[path], (mode, "root/root"), path)
        # Nothing outside the Debian layout (e.g. /usr/etc or /usr/local).
        parents = {"/", "/etc/", "/usr/", "/usr/bin/", "/usr/lib/", "/usr/lib/systemd/",
                   "/usr/lib/systemd/system/", "/usr/share/", "/usr/share/doc/",
                   "/usr/share/man/", "/usr/share/man/man1/", "/usr/share/man/man8/",
                   "/usr/share/lintian/", "/usr/share/lintian/overrides/"}
        owned = ("/etc/feedd/", "/usr/share/feedd/", "/usr/share/doc/feedd/")
        for path in self.contents:
            ok = (path in parents or path.startswith(owned) or
                  path in ("/usr/bin/feedd", "/usr/bin/feedctl", "/" + UNIT_PATH,
                           "/" + WORKER_UNIT_PATH, "/usr/share/man/man8/feedd.8.gz",
                           "/usr/share/man/man1/feedctl.1.gz",
                           "/usr/share/lintian/overrides/feedd"))
            self.assertTrue(ok, "unexpected path %s in the package" % path)

    # ---- dpkg --root: install, remove, purge ----
    def test_install_remove_purge(self):
        root = os.path.join(self.tmp, "root")
        admin = os.path.join(root, "var", "lib", "dpkg")
        for sub in ("info", "updates", "triggers"):
            os.makedirs(os.path.join(admin, sub))
        for name in ("status", "available"):
            open(os.path.join(admin, name), "w").close()
        dpkg = ["dpkg", "--root=" + root, "--log=" + os.path.join(self.tmp, "dpkg.log"),
                "--force-not-root", "--force-depends", "--force-script-chrootless"]

        host_link_before = os.path.lexists("/" + WANTS_LINK)
        out = run(dpkg + ["-i", self.deb])
        status = run(["dpkg-query", "--root=" + root, "-W", "-f=${Status}", "feedd"])
        self.assertEqual(status, "install ok installed", out)
        installed = {
            "usr/bin/feedd", "usr/bin/feedctl", "etc/feedd/feedd.conf", UNIT_PATH,
            WORKER_UNIT_PATH, "usr/share/doc/feedd/README.md",
        } | {"usr/share/feedd/monitoring/" + n for n in monitoring_files()}
        for path in installed:
            self.assertTrue(os.path.isfile(os.path.join(root, path)), path)
        with open(os.path.join(root, UNIT_PATH)) as f, \
                open(os.path.join(SOURCE_DIR, "configs", "feedd.service")) as g:
            self.assertEqual(f.read(), g.read())
        # The packaged configuration is configs/feedd.conf with the unit's
        # data directory, and it is valid.
        with open(os.path.join(root, "etc/feedd/feedd.conf")) as f, \
                open(os.path.join(SOURCE_DIR, "configs", "feedd.conf")) as g:
            packaged, source = f.read(), g.read()
        self.assertRegex(packaged, r"(?m)^data_dir = /var/lib/feedd$")
        self.assertNotRegex(packaged, r"(?m)^data_dir = \./data$")
        strip = lambda text: [l for l in text.splitlines()
                              if not l.startswith("data_dir") and not l.startswith("#")]
        self.assertEqual(strip(packaged), strip(source))
        check = run([os.path.join(root, "usr/bin/feedd"), "--config",
                     os.path.join(root, "etc/feedd/feedd.conf"), "--check-config"])
        self.assertIn("configuration OK", check)
        # The stripped binary still runs.
        version = run([os.path.join(root, "usr/bin/feedd"), "--version"])
        self.assertRegex(version, r"^feedd \d+\.\d+\.\d+")
        # postinst enabled the unit offline, inside the root only.
        if shutil.which("systemctl"):
            link = os.path.join(root, WANTS_LINK)
            self.assertTrue(os.path.islink(link), "postinst did not enable feedd:\n" + out)
            self.assertEqual(os.readlink(link), "/" + UNIT_PATH)
        self.assertEqual(os.path.lexists("/" + WANTS_LINK), host_link_before,
                         "the host's enable symlink changed")

        # A second install (same version) is an upgrade path: configure with $2.
        run(dpkg + ["-i", self.deb])

        # remove: everything but the conffile goes; the enable link stays
        # (dangling, harmless) so a reinstall keeps the admin's choice.
        out = run(dpkg + ["-r", "feedd"])
        status = run(["dpkg-query", "--root=" + root, "-W", "-f=${Status}", "feedd"])
        self.assertEqual(status, "deinstall ok config-files", out)
        for path in installed - {"etc/feedd/feedd.conf"}:
            self.assertFalse(os.path.exists(os.path.join(root, path)), path)
        self.assertTrue(os.path.isfile(os.path.join(root, "etc/feedd/feedd.conf")))

        # purge: the conffile and the enable link go too.
        out = run(dpkg + ["-P", "feedd"])
        self.assertFalse(os.path.exists(os.path.join(root, "etc/feedd/feedd.conf")), out)
        self.assertFalse(os.path.lexists(os.path.join(root, WANTS_LINK)), out)
        status = subprocess.run(["dpkg-query", "--root=" + root, "-W", "feedd"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertNotEqual(status.returncode, 0, status.stdout)
        leftovers = []
        for dirpath, dirs, files in os.walk(root):
            rel = os.path.relpath(dirpath, root)
            if rel.startswith("var/lib/dpkg") or rel.startswith("etc/systemd"):
                continue
            leftovers += [os.path.join(rel, n) for n in files]
        self.assertEqual(leftovers, [], "files left after purge")


if __name__ == "__main__":
    unittest.main()
