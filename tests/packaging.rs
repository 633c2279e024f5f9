//! The Debian package and the service unit agree: the conffile is what
//! `print-config` prints, it is installed where the unit's ExecStart reads it,
//! the binary where ExecStart runs it, the page the unit's Documentation= names is
//! shipped, and the data directory is the unit's StateDirectory=. `.ci/package`
//! then builds, installs and purges the real package.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap()
}

/// `[package.metadata.deb]` of the root manifest.
fn deb() -> toml::Table {
    let manifest: toml::Table = toml::from_str(&read("Cargo.toml")).unwrap();
    manifest["package"]["metadata"]["deb"]
        .as_table()
        .expect("Cargo.toml has [package.metadata.deb]")
        .clone()
}

/// `(source, destination)` of every asset, destinations made absolute and
/// directories completed with the file name, as cargo-deb installs them.
fn assets() -> Vec<(String, String)> {
    deb()["assets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let a = a.as_array().unwrap();
            let src = a[0].as_str().unwrap().to_string();
            let mut dst = format!("/{}", a[1].as_str().unwrap());
            if dst.ends_with('/') {
                let name = Path::new(&src).file_name().unwrap().to_string_lossy();
                dst.push_str(&name);
            }
            (src, dst)
        })
        .collect()
}

/// The unit's `Key=value` lines for `key`.
fn unit(key: &str) -> Vec<String> {
    read("systemd/eboard-bridge.service")
        .lines()
        .filter_map(|l| l.strip_prefix(&format!("{key}=")))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_packaged_configuration_is_what_print_config_prints() {
    let out = Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
        .arg("print-config")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        read("packaging/eboard-bridge.toml"),
        String::from_utf8(out.stdout).unwrap(),
        "packaging/eboard-bridge.toml is stale: regenerate it with \
         `cargo run -- print-config > packaging/eboard-bridge.toml`"
    );
}

#[test]
fn the_package_installs_what_the_unit_uses() {
    let assets = assets();
    let dest = |src: &str| {
        assets
            .iter()
            .find(|(s, _)| s == src)
            .map(|(_, d)| d.clone())
            .unwrap_or_else(|| panic!("{src} is not packaged"))
    };
    // ExecStart runs the packaged binary on the packaged configuration.
    let exec = unit("ExecStart");
    assert_eq!(exec.len(), 1);
    let config_dir = unit("ConfigurationDirectory");
    assert_eq!(config_dir, ["eboard-bridge"]);
    assert_eq!(
        exec[0],
        format!(
            "{} run --config ${{CONFIGURATION_DIRECTORY}}/eboard-bridge.toml",
            dest("target/release/eboard-bridge")
        )
    );
    let conf = dest("packaging/eboard-bridge.toml");
    assert_eq!(conf, "/etc/eboard-bridge/eboard-bridge.toml");
    let conffiles: Vec<String> = deb()["conf-files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(conffiles, std::slice::from_ref(&conf));
    // The documentation the unit points at is shipped.
    let doc = unit("Documentation");
    assert_eq!(
        doc,
        ["file:///usr/share/doc/eboard-bridge/configuration.md"]
    );
    let docs_glob = dest("docs/*.md");
    assert_eq!(docs_glob, "/usr/share/doc/eboard-bridge/*.md");
    assert!(root().join("docs/configuration.md").exists());
    // udev rules where udev reads packaged rules.
    assert_eq!(
        dest("systemd/60-eboard-bridge.rules"),
        "/usr/lib/udev/rules.d/60-eboard-bridge.rules"
    );
    // The data directory: the unit's StateDirectory= and the daemon's default agree.
    assert_eq!(unit("StateDirectory"), ["eboard-bridge"]);
    assert_eq!(
        unit("Environment")
            .iter()
            .filter(|e| e.starts_with("EBOARD_BRIDGE_DATA_DIR="))
            .collect::<Vec<_>>(),
        ["EBOARD_BRIDGE_DATA_DIR=/var/lib/eboard-bridge"]
    );
    assert_eq!(
        eboard_bridge::daemon::config::Config::default()
            .storage
            .data_dir,
        Path::new("/var/lib/eboard-bridge")
    );
    // cargo-deb enables, starts and stops this unit.
    let units = deb()["systemd-units"].as_table().unwrap().clone();
    assert_eq!(units["unit-name"].as_str(), Some("eboard-bridge"));
    assert_eq!(units["enable"].as_bool(), Some(true));
    assert_eq!(units["start"].as_bool(), Some(true));
}

#[test]
fn the_maintainer_scripts_leave_room_for_the_systemd_steps() {
    for script in ["postinst", "postrm"] {
        let text = read(&format!("packaging/deb/{script}"));
        assert!(text.starts_with("#!/bin/sh\n"), "{script}");
        // cargo-deb puts the enable/start/stop steps at this token.
        assert_eq!(text.matches("#DEBHELPER#").count(), 1, "{script}");
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(root().join("packaging/deb").join(script))
                .unwrap()
                .permissions(),
        );
        assert_eq!(mode & 0o111, 0o111, "{script} is executable");
    }
    // Data goes on purge only.
    let postrm = read("packaging/deb/postrm");
    let purge = postrm.find("purge)").unwrap();
    let rm = postrm.find("rm -rf /var/lib/eboard-bridge").unwrap();
    assert!(rm > purge, "the data is removed in the purge branch");
    assert_eq!(postrm.matches("rm -rf").count(), 1);
}
