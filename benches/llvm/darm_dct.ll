; DCT of the DARM paper (tests/corpus/darm_dct.wir) as LLVM IR, for comparing with LLVM
; 14's own flattening: `opt-14 -O3 -S darm_dct.ll`. The same control flow and
; instructions as the warplift kernel (block and grid sizes are arguments).
target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7"
target triple = "amdgcn-amd-amdhsa"

declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()

define amdgpu_kernel void @darm_dct(i16 addrspace(1)* %plane, i16 addrspace(1)* %q, i32 %stride, i32 %rows, i32 %bd, i32 %gd) {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %bid = call i32 @llvm.amdgcn.workgroup.id.x()
  %across = udiv i32 %stride, %bd
  %down = lshr i32 %rows, 3
  %tiles = mul i32 %across, %down
  br label %tile

tile:
  %t = phi i32 [ %bid, %entry ], [ %t.next, %tdone ]
  %more = icmp ult i32 %t, %tiles
  br i1 %more, label %tbody, label %exit

tbody:
  %tx = urem i32 %t, %across
  %ty = udiv i32 %t, %across
  %c0 = mul i32 %tx, %bd
  %col = add i32 %c0, %tid
  %row0 = shl i32 %ty, 3
  %col8 = and i32 %col, 7
  br label %row

row:
  %r = phi i32 [ 0, %tbody ], [ %r.next, %join ]
  %rm = icmp ult i32 %r, 8
  br i1 %rm, label %rbody, label %tdone

rbody:
  %rr = add i32 %row0, %r
  %ra = mul i32 %rr, %stride
  %ri = add i32 %ra, %col
  %ri64 = zext i32 %ri to i64
  %pc = getelementptr i16, i16 addrspace(1)* %plane, i64 %ri64
  %coef16 = load i16, i16 addrspace(1)* %pc
  %coef = sext i16 %coef16 to i32
  %qr = shl i32 %r, 3
  %qi = add i32 %qr, %col8
  %qi64 = zext i32 %qi to i64
  %pq = getelementptr i16, i16 addrspace(1)* %q, i64 %qi64
  %q16 = load i16, i16 addrspace(1)* %pq
  %cq = sext i16 %q16 to i32
  %half = ashr i32 %cq, 1
  %neg = icmp slt i32 %coef, 0
  br i1 %neg, label %negative, label %positive

negative:
  %n1 = sub i32 0, %coef
  %n2 = add i32 %n1, %half
  %n3 = sdiv i32 %n2, %cq
  %n4 = sub i32 0, %n3
  br label %join

positive:
  %p1 = add i32 %coef, %half
  %p2 = sdiv i32 %p1, %cq
  br label %join

join:
  %quant = phi i32 [ %n4, %negative ], [ %p2, %positive ]
  %res = mul i32 %quant, %cq
  %res16 = trunc i32 %res to i16
  store i16 %res16, i16 addrspace(1)* %pc
  %r.next = add i32 %r, 1
  br label %row

tdone:
  %t.next = add i32 %t, %gd
  br label %tile

exit:
  ret void
}
