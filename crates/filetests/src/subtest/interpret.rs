//! `test interpret`: the reference interpreter runs the kernel's launch to the values of
//! the launch file's `[expect]` table at every warp width, and, unless the kernel reads
//! `lane_id`, leaves the same memory at every width.

use crate::subtest::{run::WIDTHS, widths};
use crate::{Command, Failure, TestFile};
use warplift_ir::interp::{self, InterpConfig};
use warplift_ir::Opcode;

/// Runs one `test interpret` command of `file`.
pub(crate) fn run_command(file: &TestFile, command: &Command) -> Result<(), Failure> {
    let widths = widths(command, &WIDTHS)?;
    let (func, prepared) = file.kernel()?;
    if prepared.memory.check_expectations().is_ok() && file.launch()?.expect.is_empty() {
        return Err(Failure::at(
            command.line,
            "the launch file has no [expect] table for `test interpret` to check",
        ));
    }
    let lane_dependent = func.layout.blocks().iter().any(|&b| {
        func.layout
            .block_insts(b)
            .iter()
            .any(|&i| func.inst(i).opcode() == Opcode::LaneId)
    });
    let mut first: Option<(u32, Vec<Vec<u8>>)> = None;
    for width in widths {
        let mut launch = prepared.clone();
        let config = InterpConfig {
            warp_width: width,
            ..InterpConfig::default()
        };
        interp::run(&func, &mut launch, &config)
            .map_err(|e| Failure::at(command.line, format!("width {width}: {e}")))?;
        launch.memory.check_expectations().map_err(|e| {
            Failure::at(
                command.line,
                format!("width {width}: [expect]:\n{}", e.report.join("\n")),
            )
        })?;
        let bytes: Vec<Vec<u8>> = launch
            .memory
            .buffers
            .iter()
            .map(|b| b.bytes.clone())
            .collect();
        match &first {
            _ if lane_dependent => {}
            None => first = Some((width, bytes)),
            Some((w0, b0)) => {
                if let Some(i) = (0..b0.len()).find(|&i| b0[i] != bytes[i]) {
                    return Err(Failure::at(
                        command.line,
                        format!(
                            "buffer {} differs between warp widths {w0} and {width}",
                            launch.memory.buffers[i].name
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}
