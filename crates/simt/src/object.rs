//! ELF objects holding SIMT kernels, with DWARF line tables; and their loader.
//!
//! [`write_object`] writes a relocatable ELF64 little-endian object (`e_machine` =
//! `EM_NONE`: no real processor runs it) with, per kernel, a section `.text.<kernel>`
//! holding its bytecode and a global function symbol `<kernel>` over it; one metadata
//! section `.warplift.kernels` (format version, and per kernel its signature, register
//! counts, memory sizes and block table); and a DWARF 4 compile unit (`.debug_info`,
//! `.debug_abbrev`, `.debug_line`, `.debug_str`) named after the `.wir` file, whose line
//! program has one sequence per kernel, in metadata order, with addresses equal to pcs
//! (offsets in the kernel's section). No relocations are needed, and `readelf
//! --debug-dump=decodedline` shows each kernel's pcs and lines as they are.
//!
//! [`load_object`] reads all of that back with `object` and `gimli`, checks it, decodes
//! and validates every kernel, and never panics on malformed input. The layout is
//! documented in `docs/bytecode.md`.

use crate::code::KernelCode;
use crate::codes::ByteCode;
use crate::decode::{decode, BlockInfo, DecodeError, DecodedKernel, KernelInfo};
use crate::ops::put_uleb;
use crate::FORMAT_VERSION;
use cranelift_entity::EntityRef;
use gimli::write::{
    Address, AttributeValue, DwarfUnit, EndianVec, LineProgram, LineString, Sections,
};
use object::write::elf::{FileHeader, SectionHeader, Sym, Writer};
use object::{Object, ObjectSection};
use std::collections::HashSet;
use warplift_ir::{Block, Param, SourceLoc, Type};

/// The name of the metadata section.
pub const METADATA_SECTION: &str = ".warplift.kernels";
/// The metadata section's first bytes.
pub const METADATA_MAGIC: &[u8; 4] = b"WLFT";
/// The prefix of each kernel's code section name.
pub const TEXT_PREFIX: &str = ".text.";

/// Why an object could not be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectError {
    /// Two kernels with one name.
    #[error("two kernels are named {0}")]
    DuplicateKernel(String),
    /// A kernel name that cannot name a section and a symbol.
    #[error("kernel name {0:?} is empty or contains a NUL byte")]
    BadKernelName(String),
    /// A source name DWARF cannot hold.
    #[error("source name {0:?} is empty or contains a NUL byte")]
    BadSourceName(String),
    /// The line table disagrees with the code (pcs out of order or past the end).
    #[error("kernel {0}: instruction pcs are not increasing within the code")]
    BadLines(String),
    /// Writing DWARF failed.
    #[error("writing DWARF: {0}")]
    Dwarf(String),
    /// Writing ELF failed.
    #[error("writing ELF: {0}")]
    Elf(String),
}

/// Why an object could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// Not an ELF object, or a malformed one.
    #[error("not a valid ELF object: {0}")]
    Elf(String),
    /// The metadata section is missing.
    #[error("no {METADATA_SECTION} section")]
    NoMetadata,
    /// The metadata section has the wrong magic.
    #[error("the {METADATA_SECTION} section does not start with the warplift magic")]
    BadMagic,
    /// A format version this loader does not know.
    #[error("format version {found}, but this loader reads version {FORMAT_VERSION}")]
    Version {
        /// The version found.
        found: u16,
    },
    /// Malformed metadata.
    #[error("malformed metadata: {0}")]
    Metadata(String),
    /// A kernel's code section is missing or disagrees with the metadata.
    #[error("kernel {kernel}: {what}")]
    Code {
        /// The kernel.
        kernel: String,
        /// What is wrong.
        what: String,
    },
    /// A kernel's bytecode does not validate.
    #[error("kernel {kernel}: {error}")]
    Decode {
        /// The kernel.
        kernel: String,
        /// Why.
        error: DecodeError,
    },
    /// Malformed DWARF.
    #[error("malformed DWARF: {0}")]
    Dwarf(String),
}

/// A kernel's line table: pc → source location.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineTable {
    /// Rows in pc order: each location holds from its pc up to the next row's.
    pub rows: Vec<(u32, SourceLoc)>,
}

impl LineTable {
    /// The source location of the instruction at `pc` (unknown if no row covers it).
    pub fn lookup(&self, pc: u32) -> SourceLoc {
        match self.rows.partition_point(|&(p, _)| p <= pc) {
            0 => SourceLoc::default(),
            i => self.rows[i - 1].1,
        }
    }
}

/// A loaded kernel: decoded, validated code and its line table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedKernel {
    /// The kernel.
    pub kernel: DecodedKernel,
    /// Its source locations (empty if the object has no DWARF).
    pub lines: LineTable,
}

/// A loaded object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedObject {
    /// The `.wir` file the kernels were compiled from.
    pub source_name: String,
    /// The kernels, in metadata order.
    pub kernels: Vec<LoadedKernel>,
}

impl LoadedObject {
    /// The kernel called `name`.
    pub fn kernel(&self, name: &str) -> Option<&LoadedKernel> {
        self.kernels.iter().find(|k| k.kernel.info.name == name)
    }
}

// ---------------------------------------------------------------------------------------
// Metadata.

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_uleb(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// Serializes the metadata section.
fn write_metadata(kernels: &[KernelCode], source_name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(METADATA_MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    put_str(&mut out, source_name);
    put_uleb(&mut out, kernels.len() as u64);
    for k in kernels {
        let info = &k.info;
        put_str(&mut out, &info.name);
        put_uleb(&mut out, k.code.len() as u64);
        put_uleb(&mut out, info.params.len() as u64);
        for p in &info.params {
            put_str(&mut out, &p.name);
            out.push(p.ty.code());
        }
        for n in info.num_regs {
            put_uleb(&mut out, u64::from(n));
        }
        put_uleb(&mut out, u64::from(info.shared_size));
        put_uleb(&mut out, u64::from(info.local_size));
        put_uleb(&mut out, u64::from(info.spill_slots));
        put_uleb(&mut out, info.blocks.len() as u64);
        for b in &info.blocks {
            put_uleb(&mut out, u64::from(b.pc));
            put_uleb(&mut out, b.origin.map_or(0, |o| o.index() as u64 + 1));
        }
    }
    out
}

/// A cursor over the metadata section.
struct Meta<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Meta<'a> {
    fn err(&self, what: &str) -> LoadError {
        LoadError::Metadata(format!("{what} at byte {}", self.pos))
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], LoadError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| self.err("unexpected end"))?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, LoadError> {
        Ok(self.bytes(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, LoadError> {
        let mut v = 0u64;
        for i in 0..5 {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return u32::try_from(v).map_err(|_| self.err("number out of range"));
            }
        }
        Err(self.err("number too long"))
    }

    fn str(&mut self) -> Result<String, LoadError> {
        let n = self.u32()? as usize;
        let b = self.bytes(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| self.err("string is not UTF-8"))
    }
}

/// What the metadata says about one kernel.
struct MetaKernel {
    info: KernelInfo,
    code_len: u32,
}

fn read_metadata(bytes: &[u8]) -> Result<(String, Vec<MetaKernel>), LoadError> {
    let mut m = Meta { bytes, pos: 0 };
    if m.bytes(4).ok() != Some(&METADATA_MAGIC[..]) {
        return Err(LoadError::BadMagic);
    }
    let v = m.bytes(2)?;
    let found = u16::from_le_bytes([v[0], v[1]]);
    if found != FORMAT_VERSION {
        return Err(LoadError::Version { found });
    }
    let source = m.str()?;
    let count = m.u32()?;
    let mut kernels = Vec::new();
    for _ in 0..count {
        let name = m.str()?;
        let code_len = m.u32()?;
        let nparams = m.u32()?;
        let mut params = Vec::new();
        for _ in 0..nparams {
            let pname = m.str()?;
            let code = m.u8()?;
            let ty = Type::from_code(code).ok_or_else(|| m.err("unknown parameter type"))?;
            params.push(Param { name: pname, ty });
        }
        let num_regs = [m.u32()?, m.u32()?, m.u32()?];
        let shared_size = m.u32()?;
        let local_size = m.u32()?;
        let spill_slots = m.u32()?;
        let nblocks = m.u32()?;
        let mut blocks = Vec::new();
        for _ in 0..nblocks {
            let pc = m.u32()?;
            let origin = match m.u32()? {
                0 => None,
                n => Some(Block::new(n as usize - 1)),
            };
            blocks.push(BlockInfo { pc, origin });
        }
        kernels.push(MetaKernel {
            info: KernelInfo {
                name,
                params,
                num_regs,
                shared_size,
                local_size,
                spill_slots,
                blocks,
            },
            code_len,
        });
    }
    if m.pos != bytes.len() {
        return Err(m.err("trailing bytes"));
    }
    Ok((source, kernels))
}

// ---------------------------------------------------------------------------------------
// DWARF.

/// The DWARF sections describing `kernels`, by name.
fn write_dwarf(
    kernels: &[KernelCode],
    source_name: &str,
) -> Result<Vec<(&'static str, Vec<u8>)>, ObjectError> {
    let encoding = gimli::Encoding {
        format: gimli::Format::Dwarf32,
        version: 4,
        address_size: 8,
    };
    let mut dwarf = DwarfUnit::new(encoding);
    let program = LineProgram::new(
        encoding,
        gimli::LineEncoding::default(),
        LineString::String(b".".to_vec()),
        None,
        LineString::String(source_name.as_bytes().to_vec()),
        None,
    );
    dwarf.unit.line_program = program;
    let dir = dwarf.unit.line_program.default_directory();
    let file = dwarf.unit.line_program.add_file(
        LineString::String(source_name.as_bytes().to_vec()),
        dir,
        None,
    );
    for k in kernels {
        let program = &mut dwarf.unit.line_program;
        program.begin_sequence(Some(Address::Constant(0)));
        let mut last: Option<SourceLoc> = None;
        let mut prev_pc = None;
        for inst in &k.insts {
            if prev_pc.is_some_and(|p| inst.pc <= p) || inst.pc as usize >= k.code.len() {
                return Err(ObjectError::BadLines(k.info.name.clone()));
            }
            prev_pc = Some(inst.pc);
            if last == Some(inst.srcloc) {
                continue;
            }
            last = Some(inst.srcloc);
            let row = program.row();
            row.file = file;
            row.address_offset = u64::from(inst.pc);
            row.line = u64::from(inst.srcloc.line);
            row.column = u64::from(inst.srcloc.col);
            program.generate_row();
        }
        program.end_sequence(k.code.len() as u64);
    }
    let root = dwarf.unit.root();
    let name = dwarf.strings.add(source_name.as_bytes().to_vec());
    let producer = dwarf.strings.add(b"warplift".to_vec());
    let cu = dwarf.unit.get_mut(root);
    cu.set(gimli::DW_AT_name, AttributeValue::StringRef(name));
    cu.set(gimli::DW_AT_producer, AttributeValue::StringRef(producer));
    cu.set(gimli::DW_AT_comp_dir, AttributeValue::String(b".".to_vec()));
    let mut sections = Sections::new(EndianVec::new(gimli::LittleEndian));
    dwarf
        .write(&mut sections)
        .map_err(|e| ObjectError::Dwarf(e.to_string()))?;
    let mut out = Vec::new();
    sections.for_each(|id, data| {
        if !data.slice().is_empty() {
            out.push((id.name(), data.slice().to_vec()));
        }
        Ok::<(), ObjectError>(())
    })?;
    Ok(out)
}

/// Reads each kernel's line table back: sequence `i` of the unit's line program describes
/// kernel `i`.
fn read_dwarf(
    file: &object::File<'_>,
    kernels: &[MetaKernel],
) -> Result<Option<(String, Vec<LineTable>)>, LoadError> {
    let derr = |e: gimli::Error| LoadError::Dwarf(e.to_string());
    if file.section_by_name(".debug_info").is_none() {
        return Ok(None);
    }
    let load =
        |id: gimli::SectionId| -> Result<gimli::EndianSlice<'_, gimli::LittleEndian>, LoadError> {
            let data = match file.section_by_name(id.name()) {
                Some(s) => s.data().map_err(|e| LoadError::Elf(e.to_string()))?,
                None => &[],
            };
            Ok(gimli::EndianSlice::new(data, gimli::LittleEndian))
        };
    let dwarf = gimli::Dwarf::load(load)?;
    let mut units = dwarf.units();
    let header = units
        .next()
        .map_err(derr)?
        .ok_or_else(|| LoadError::Dwarf("no compile unit".into()))?;
    let unit = dwarf.unit(header).map_err(derr)?;
    let name = unit
        .name
        .map(|n| String::from_utf8_lossy(n.slice()).into_owned())
        .unwrap_or_default();
    let Some(program) = unit.line_program.clone() else {
        // An object without kernels has an empty line program, which is not written.
        return if kernels.is_empty() {
            Ok(Some((name, Vec::new())))
        } else {
            Err(LoadError::Dwarf(
                "the compile unit has no line program".into(),
            ))
        };
    };
    let mut tables: Vec<LineTable> = Vec::new();
    let mut current = LineTable::default();
    let mut rows = program.rows();
    while let Some((_, row)) = rows.next_row().map_err(derr)? {
        let k = tables.len();
        let Some(kernel) = kernels.get(k) else {
            return Err(LoadError::Dwarf("more line sequences than kernels".into()));
        };
        let addr = row.address();
        if row.end_sequence() {
            if addr != u64::from(kernel.code_len) {
                return Err(LoadError::Dwarf(format!(
                    "the line sequence of kernel {} ends at {addr:#x}, not at the end of its code",
                    kernel.info.name
                )));
            }
            tables.push(core::mem::take(&mut current));
            continue;
        }
        let pc = u32::try_from(addr)
            .ok()
            .filter(|&pc| pc < kernel.code_len && current.rows.last().is_none_or(|l| l.0 <= pc))
            .ok_or_else(|| {
                LoadError::Dwarf(format!(
                    "line row address {addr:#x} out of order or outside kernel {}",
                    kernel.info.name
                ))
            })?;
        let line = row.line().map_or(0, |l| l.get());
        let col = match row.column() {
            gimli::ColumnType::LeftEdge => 0,
            gimli::ColumnType::Column(c) => c.get(),
        };
        let loc = SourceLoc::new(
            u32::try_from(line).unwrap_or(u32::MAX),
            u32::try_from(col).unwrap_or(u32::MAX),
        );
        if current.rows.last().is_some_and(|l| l.0 == pc) {
            current.rows.pop();
        }
        current.rows.push((pc, loc));
    }
    if !current.rows.is_empty() || tables.len() != kernels.len() {
        return Err(LoadError::Dwarf(format!(
            "{} line sequences for {} kernels",
            tables.len(),
            kernels.len()
        )));
    }
    Ok(Some((name, tables)))
}

// ---------------------------------------------------------------------------------------
// ELF.

/// One section to write.
struct OutSection<'a> {
    name: Vec<u8>,
    data: &'a [u8],
    sh_type: object::elf::SectionType,
    sh_flags: object::elf::SectionFlags,
    align: u64,
}

/// Writes the ELF object holding `kernels`, compiled from the `.wir` file `source_name`
/// (see the module documentation for its layout).
pub fn write_object(kernels: &[KernelCode], source_name: &str) -> Result<Vec<u8>, ObjectError> {
    use object::elf;
    if source_name.is_empty() || source_name.contains('\0') {
        return Err(ObjectError::BadSourceName(source_name.to_string()));
    }
    let mut names = HashSet::new();
    for k in kernels {
        let name = &k.info.name;
        if name.is_empty() || name.contains('\0') {
            return Err(ObjectError::BadKernelName(name.clone()));
        }
        if !names.insert(name.as_str()) {
            return Err(ObjectError::DuplicateKernel(name.clone()));
        }
    }
    let metadata = write_metadata(kernels, source_name);
    let debug = write_dwarf(kernels, source_name)?;

    let mut sections: Vec<OutSection<'_>> = Vec::new();
    for k in kernels {
        sections.push(OutSection {
            name: format!("{TEXT_PREFIX}{}", k.info.name).into_bytes(),
            data: &k.code,
            sh_type: elf::SHT_PROGBITS,
            sh_flags: elf::SHF_ALLOC | elf::SHF_EXECINSTR,
            align: 8,
        });
    }
    sections.push(OutSection {
        name: METADATA_SECTION.as_bytes().to_vec(),
        data: &metadata,
        sh_type: elf::SHT_PROGBITS,
        sh_flags: elf::SectionFlags(0),
        align: 8,
    });
    for (name, data) in &debug {
        sections.push(OutSection {
            name: name.as_bytes().to_vec(),
            data,
            sh_type: elf::SHT_PROGBITS,
            sh_flags: elf::SectionFlags(0),
            align: 1,
        });
    }

    let mut buffer = Vec::new();
    let mut w = Writer::new(object::Endianness::Little, true, &mut buffer);
    w.reserve_file_header();
    w.reserve_null_section_index();
    let mut placed = Vec::new();
    for s in &sections {
        let name = w.add_section_name(&s.name);
        let index = w.reserve_section_index();
        placed.push((name, index));
    }
    w.reserve_symtab_section_index();
    w.reserve_strtab_section_index();
    w.reserve_shstrtab_section_index();
    let mut offsets = Vec::new();
    for s in &sections {
        offsets.push(w.reserve(s.data.len() as u64, s.align));
    }
    w.reserve_null_symbol_index();
    let mut symbols = Vec::new();
    for (i, k) in kernels.iter().enumerate() {
        let name = w.add_string(k.info.name.as_bytes());
        w.reserve_symbol_index(Some(placed[i].1));
        symbols.push(name);
    }
    w.reserve_symtab();
    let elf_err = |e: object::write::Error| ObjectError::Elf(e.to_string());
    w.reserve_strtab().map_err(elf_err)?;
    w.reserve_shstrtab().map_err(elf_err)?;
    w.reserve_section_headers();

    w.write_file_header(&FileHeader {
        os_abi: elf::ELFOSABI_NONE,
        abi_version: 0,
        e_type: elf::ET_REL,
        e_machine: elf::EM_NONE,
        e_entry: 0,
        e_flags: elf::FileFlags(0),
    })
    .map_err(elf_err)?;
    for s in &sections {
        w.write_align(s.align);
        w.write(s.data);
    }
    w.write_null_symbol();
    for (i, k) in kernels.iter().enumerate() {
        w.write_symbol(&Sym {
            st_name: w.string_offset(Some(symbols[i])),
            section: Some(placed[i].1 .0),
            st_info: elf::SymbolInfo::new(elf::STB_GLOBAL, elf::STT_FUNC),
            st_other: elf::SymbolOther(0).with_visibility(elf::STV_DEFAULT),
            st_shndx: elf::SHN_UNDEF,
            st_value: 0,
            st_size: k.code.len() as u64,
        });
    }
    w.write_strtab();
    w.write_shstrtab();
    w.write_null_section_header();
    for (i, s) in sections.iter().enumerate() {
        w.write_section_header(&SectionHeader {
            sh_name: w.section_name_offset(Some(placed[i].0)),
            sh_type: s.sh_type,
            sh_flags: s.sh_flags,
            sh_addr: 0,
            sh_offset: offsets[i],
            sh_size: s.data.len() as u64,
            sh_link: 0,
            sh_info: 0,
            sh_addralign: s.align,
            sh_entsize: 0,
        });
    }
    // The null symbol is the only local one.
    w.write_symtab_section_header(1);
    w.write_strtab_section_header();
    w.write_shstrtab_section_header();
    debug_assert_eq!(w.reserved_len(), w.len());
    Ok(buffer)
}

/// Loads, checks and decodes the object `bytes` (see the module documentation).
pub fn load_object(bytes: &[u8]) -> Result<LoadedObject, LoadError> {
    let file = object::File::parse(bytes).map_err(|e| LoadError::Elf(e.to_string()))?;
    if file.format() != object::BinaryFormat::Elf {
        return Err(LoadError::Elf("not an ELF file".into()));
    }
    let meta = file
        .section_by_name(METADATA_SECTION)
        .ok_or(LoadError::NoMetadata)?
        .data()
        .map_err(|e| LoadError::Elf(e.to_string()))?;
    let (source_name, metas) = read_metadata(meta)?;
    let mut seen = HashSet::new();
    for m in &metas {
        if !seen.insert(m.info.name.as_str()) {
            return Err(LoadError::Metadata(format!(
                "two kernels are named {}",
                m.info.name
            )));
        }
    }
    let lines = read_dwarf(&file, &metas)?;
    let mut tables = match lines {
        Some((name, tables)) => {
            if name != source_name {
                return Err(LoadError::Dwarf(format!(
                    "the compile unit is named {name:?}, the metadata says {source_name:?}"
                )));
            }
            tables
        }
        None => vec![LineTable::default(); metas.len()],
    };
    let mut kernels = Vec::with_capacity(metas.len());
    for (m, lines) in metas.iter().zip(tables.drain(..)) {
        let name = &m.info.name;
        let code_err = |what: String| LoadError::Code {
            kernel: name.clone(),
            what,
        };
        let section = file
            .section_by_name(&format!("{TEXT_PREFIX}{name}"))
            .ok_or_else(|| code_err(format!("no section {TEXT_PREFIX}{name}")))?;
        let code = section.data().map_err(|e| code_err(e.to_string()))?;
        if code.len() as u64 != u64::from(m.code_len) {
            return Err(code_err(format!(
                "its section holds {} bytes, the metadata says {}",
                code.len(),
                m.code_len
            )));
        }
        let kernel = decode(code, &m.info).map_err(|error| LoadError::Decode {
            kernel: name.clone(),
            error,
        })?;
        kernels.push(LoadedKernel { kernel, lines });
    }
    Ok(LoadedObject {
        source_name,
        kernels,
    })
}
