//! Files under the data directory: the journal (captures with the arbiters'
//! commands, event logs with every alert), the arbiter token, the arbiters'
//! rulings and pairing changes, the PGN files. All of it is the daemon's own,
//! much of it arbiter business (Article 12.6), so the daemon creates every
//! folder 0700 and every file 0600 itself, whatever umask it was started
//! with (a hand-started `run` often has 0022; only the service unit sets one).

use std::fs::{DirBuilder, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Mode of every folder the daemon creates under the data directory.
pub const DIR_MODE: u32 = 0o700;
/// Mode of every file the daemon creates under the data directory.
pub const FILE_MODE: u32 = 0o600;

/// The daemon's own folders under the data directory.
pub const SUBDIRS: [&str; 6] = [
    "journal",
    "journal/captures",
    "journal/events",
    "games",
    "operator",
    "broadcast",
];

/// Creates `path` and its missing parents with mode 0700.
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)
}

/// Open options that create files with mode 0600.
pub fn options() -> OpenOptions {
    let mut o = OpenOptions::new();
    o.mode(FILE_MODE);
    o
}

/// Why the data directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DataDirError {
    #[error(
        "storage.data_dir {0} is a file, not a directory; point data_dir (or \
         EBOARD_BRIDGE_DATA_DIR) at a directory, or move the file away"
    )]
    NotADirectory(PathBuf),
    #[error(
        "cannot create the data directory {path}: {source}; create it by hand for the daemon's \
         user, or point data_dir (or EBOARD_BRIDGE_DATA_DIR) at a writable place"
    )]
    Create { path: PathBuf, source: io::Error },
}

/// Makes sure `data_dir` is a directory the daemon can use: created (0700)
/// when missing; a file there is refused with a sentence that says so.
/// The daemon's own folders in it that an earlier version (or a looser
/// umask) left open to others are closed to 0700; their owner is told in
/// the log when that cannot be done.
pub fn prepare_data_dir(data_dir: &Path) -> Result<(), DataDirError> {
    match std::fs::metadata(data_dir) {
        Ok(m) if !m.is_dir() => return Err(DataDirError::NotADirectory(data_dir.to_owned())),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            create_dir_all(data_dir).map_err(|source| DataDirError::Create {
                path: data_dir.to_owned(),
                source,
            })?
        }
        Err(source) => {
            return Err(DataDirError::Create {
                path: data_dir.to_owned(),
                source,
            })
        }
    }
    for sub in SUBDIRS {
        let path = data_dir.join(sub);
        if let Ok(m) = std::fs::metadata(&path) {
            if m.is_dir() && m.permissions().mode() & 0o077 != 0 {
                if let Err(e) =
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(DIR_MODE))
                {
                    tracing::warn!(
                        "{} is open to other users and could not be closed ({e}); \
                         run `chmod 700 {}` as its owner",
                        path.display(),
                        path.display()
                    );
                }
            }
        }
    }
    Ok(())
}

/// Closes `file` to everyone but its owner (0600) if it is open to others.
/// Returns whether it had to.
pub fn make_private(file: &Path) -> io::Result<bool> {
    let mode = std::fs::metadata(file)?.permissions().mode();
    if mode & 0o077 == 0 {
        return Ok(false);
    }
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(FILE_MODE))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_as_data_dir_is_named_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("data");
        std::fs::write(&file, "").unwrap();
        let e = prepare_data_dir(&file).unwrap_err().to_string();
        assert!(e.contains("is a file, not a directory"), "{e}");
        assert!(!e.contains("token"), "{e}");
    }

    #[test]
    fn folders_left_open_are_closed() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("journal");
        std::fs::create_dir(&journal).unwrap();
        std::fs::set_permissions(&journal, std::fs::Permissions::from_mode(0o755)).unwrap();
        prepare_data_dir(dir.path()).unwrap();
        let mode = std::fs::metadata(&journal).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}
