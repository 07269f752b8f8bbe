//! A process's resident memory taken apart from `/proc/<pid>/smaps`: anonymous pages (heap,
//! stacks, the binary's relocated data), the binary's own file pages (its code and read-only
//! data the process touched), shared libraries' pages and other files'; and its PSS, which
//! divides every shared page among the processes that map it.

/// The parts, KiB.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct MemSplit {
    pub(crate) rss: u64,
    pub(crate) pss: u64,
    pub(crate) anonymous: u64,
    pub(crate) binary: u64,
    pub(crate) libraries: u64,
    pub(crate) other_files: u64,
}

impl MemSplit {
    /// The split of `pid` now (zeros when it cannot be read).
    pub(crate) fn of(pid: u32) -> Self {
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
        let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
        Self::parse(&smaps, &exe.to_string_lossy())
    }

    fn parse(smaps: &str, exe: &str) -> Self {
        let mut split = Self::default();
        let mut path = String::new();
        let mut rss = 0;
        let close = |split: &mut Self, path: &str, rss: u64, anonymous: u64| {
            let file = rss.saturating_sub(anonymous);
            split.rss += rss;
            split.anonymous += anonymous;
            if path.is_empty() || path.starts_with('[') {
                split.anonymous += file;
            } else if path == exe {
                split.binary += file;
            } else if path.ends_with(".so") || path.contains(".so.") {
                split.libraries += file;
            } else {
                split.other_files += file;
            }
        };
        for line in smaps.lines() {
            let mut fields = line.split_whitespace();
            let Some(first) = fields.next() else { continue };
            match first {
                "Rss:" => rss = kib(fields.next()),
                "Pss:" => split.pss += kib(fields.next()),
                // The last field of a mapping that this split reads.
                "Anonymous:" => close(&mut split, &path, rss, kib(fields.next())),
                _ if first.contains('-') && !first.ends_with(':') => {
                    // `start-end perms offset dev inode [path]`.
                    path = fields.nth(4).map(str::to_string).unwrap_or_default();
                    rss = 0;
                }
                _ => {}
            }
        }
        split
    }

    /// One line for a report, in MB.
    pub(crate) fn describe(&self) -> String {
        let mb = |kib: u64| kib as f64 * 1024.0 / 1e6;
        format!(
            "anonymous {:.1} MB, the binary's file pages {:.1} MB, shared libraries {:.1} MB, other files {:.1} MB; PSS {:.1} MB",
            mb(self.anonymous),
            mb(self.binary),
            mb(self.libraries),
            mb(self.other_files),
            mb(self.pss)
        )
    }
}

fn kib(field: Option<&str>) -> u64 {
    field.and_then(|f| f.parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mappings_are_counted_by_what_backs_them() {
        let smaps = "\
55d0-55e0 r-xp 00000000 08:01 123 /opt/lurkbot
Rss:                 400 kB
Pss:                 400 kB
Anonymous:             0 kB
55e0-55f0 rw-p 00010000 08:01 123 /opt/lurkbot
Rss:                  40 kB
Pss:                  40 kB
Anonymous:            32 kB
7f00-7f10 r-xp 00000000 08:01 456 /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                 900 kB
Pss:                  90 kB
Anonymous:             0 kB
7f20-7f30 rw-p 00000000 00:00 0 
Rss:                1000 kB
Pss:                1000 kB
Anonymous:          1000 kB
7ffd-7ffe rw-p 00000000 00:00 0                          [stack]
Rss:                  12 kB
Pss:                  12 kB
Anonymous:            12 kB
";
        let split = MemSplit::parse(smaps, "/opt/lurkbot");
        assert_eq!(split.rss, 2352);
        assert_eq!(split.pss, 1542);
        assert_eq!(split.anonymous, 1044);
        assert_eq!(split.binary, 408);
        assert_eq!(split.libraries, 900);
        assert_eq!(split.other_files, 0);
    }
}
