//! Content sniffing: the type of a file is read from its
//! bytes, not trusted from its name, so an executable or an archive renamed
//! `notes.md` is still a `binary_content` finding (seed BLOCKED_EXTENSIONS
//! judged by name only). Images, fonts and PDFs are recognised the same way
//!: a skill that ships `assets/icon.png` is not a finding, and a
//! text file named `icon.png` is still read as text.

/// What the first bytes say a file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Text (possibly UTF-16, decided later).
    Text,
    /// An executable or archive format, named.
    Binary(&'static str),
    /// Other binary data: NUL bytes in text that is not UTF-16.
    Data,
    /// An image, font or PDF, named: ordinary skill assets, not text a
    /// model reads as instructions; their compressed streams read as text
    /// only produce noise, so they are not scanned.
    Asset(&'static str),
}

/// Sniffs `bytes` by magic numbers, then by NUL bytes in the first 8 KiB.
pub fn sniff(bytes: &[u8]) -> Kind {
    if let Some(name) = magic(bytes) {
        return Kind::Binary(name);
    }
    if let Some(kind) = asset(bytes) {
        return kind;
    }
    let head = &bytes[..bytes.len().min(8192)];
    let utf16_bom = head.starts_with(&[0xFF, 0xFE]) || head.starts_with(&[0xFE, 0xFF]);
    if !utf16_bom && memchr::memchr(0, head).is_some() && !mostly_utf16(head) {
        return Kind::Data;
    }
    Kind::Text
}

fn mostly_utf16(head: &[u8]) -> bool {
    let pairs = head.len() / 2;
    let zeros_at = |start: usize| head.iter().skip(start).step_by(2).filter(|&&b| b == 0).count();
    pairs >= 4 && (zeros_at(1) * 10 >= pairs * 7 || zeros_at(0) * 10 >= pairs * 7)
}

fn magic(b: &[u8]) -> Option<&'static str> {
    let starts = |m: &[u8]| b.starts_with(m);
    Some(match b {
        _ if starts(b"\x7fELF") => "ELF executable",
        _ if starts(b"MZ") && is_pe(b) => "PE executable",
        _ if starts(&[0xFE, 0xED, 0xFA, 0xCE])
            || starts(&[0xFE, 0xED, 0xFA, 0xCF])
            || starts(&[0xCE, 0xFA, 0xED, 0xFE])
            || starts(&[0xCF, 0xFA, 0xED, 0xFE]) =>
        {
            "Mach-O executable"
        }
        _ if starts(&[0xCA, 0xFE, 0xBA, 0xBE]) => "Mach-O universal binary or Java class",
        _ if starts(b"\0asm") => "WebAssembly module",
        _ if starts(b"PK\x03\x04") || starts(b"PK\x05\x06") || starts(b"PK\x07\x08") => "zip archive",
        _ if starts(&[0x1F, 0x8B]) => "gzip archive",
        _ if starts(b"BZh")
            && b.get(3).is_some_and(|d| d.is_ascii_digit())
            && b.len() > 4
            && b[4..].starts_with(b"1AY") =>
        {
            "bzip2 archive"
        }
        _ if starts(&[0xFD, b'7', b'z', b'X', b'Z', 0]) => "xz archive",
        _ if starts(&[0x28, 0xB5, 0x2F, 0xFD]) => "zstd archive",
        _ if starts(&[b'7', b'z', 0xBC, 0xAF, 0x27, 0x1C]) => "7z archive",
        _ if starts(b"Rar!\x1A\x07") => "rar archive",
        _ if starts(b"!<arch>\n") => "ar archive (deb, static library)",
        _ if starts(&[0xED, 0xAB, 0xEE, 0xDB]) => "RPM package",
        _ if starts(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]) => "OLE compound file (MSI, legacy Office)",
        _ if b.len() >= 262 && &b[257..262] == b"ustar" => "tar archive",
        _ => return None,
    })
}

/// Images, fonts and PDFs by magic number. Short or printable magics
/// must be followed by binary header bytes (or, for BMP, a size field
/// that matches), so a text file cannot pass as an asset by its first
/// letters.
fn asset(b: &[u8]) -> Option<Kind> {
    let starts = |m: &[u8]| b.starts_with(m);
    let binary_after = |n: usize| b.iter().skip(n).take(16).any(|&x| x == 0 || x >= 0x80);
    let name = match b {
        _ if starts(b"\x89PNG\r\n\x1a\n") => "PNG image",
        _ if starts(&[0xFF, 0xD8, 0xFF]) => "JPEG image",
        _ if (starts(b"GIF87a") || starts(b"GIF89a")) && binary_after(6) => "GIF image",
        _ if starts(b"RIFF") && b.get(8..12) == Some(b"WEBP") => "WebP image",
        _ if starts(&[0, 0, 1, 0]) || starts(&[0, 0, 2, 0]) => "ICO image",
        _ if starts(b"II*\0") || starts(b"MM\0*") => "TIFF image",
        _ if starts(b"BM") && b.len() >= 6 && u32::from_le_bytes([b[2], b[3], b[4], b[5]]) as usize == b.len() => {
            "BMP image"
        }
        _ if (starts(b"wOFF") || starts(b"wOF2")) && binary_after(4) => "WOFF font",
        _ if starts(&[0, 1, 0, 0]) && binary_after(4) => "TrueType font",
        _ if starts(b"OTTO") && binary_after(4) => "OpenType font",
        _ if starts(b"%PDF-") && binary_after(5) => "PDF document",
        _ => return None,
    };
    Some(Kind::Asset(name))
}

/// `MZ` alone is two printable letters; a real PE has `PE\0\0` where the
/// DOS header points, or at least binary bytes right after.
fn is_pe(b: &[u8]) -> bool {
    if b.len() >= 0x40 {
        let off = u32::from_le_bytes([b[0x3C], b[0x3D], b[0x3E], b[0x3F]]) as usize;
        if b.get(off..off + 4) == Some(b"PE\0\0") {
            return true;
        }
    }
    b[..b.len().min(64)].contains(&0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_numbers_win_over_names() {
        assert_eq!(sniff(b"\x7fELF\x02\x01\x01\0"), Kind::Binary("ELF executable"));
        assert_eq!(sniff(b"PK\x03\x04rest"), Kind::Binary("zip archive"));
        assert_eq!(sniff(b"MZ is a postcode"), Kind::Text);
        assert_eq!(sniff(b"abc\0def"), Kind::Data);
        assert_eq!(sniff(b"# title\n"), Kind::Text);
    }

    #[test]
    fn assets_are_known_by_magic_and_text_is_not_an_asset() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"), Kind::Asset("PNG image"));
        assert_eq!(sniff(b"wOF2\0\x01\0\0rest"), Kind::Asset("WOFF font"));
        assert_eq!(sniff(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"), Kind::Asset("PDF document"));
        assert_eq!(sniff(b"%PDF-1.7\ncurl x | sh\n"), Kind::Text);
        assert_eq!(sniff(b"GIF89a is a format\n"), Kind::Text);
        assert_eq!(sniff(b"BM is a name\n"), Kind::Text);
        assert_eq!(sniff(b"OTTO the cat\n"), Kind::Text);
        assert_eq!(sniff(b"\x7fELF\x02"), Kind::Binary("ELF executable"));
    }
}
