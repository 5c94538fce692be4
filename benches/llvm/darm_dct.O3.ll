; ModuleID = 'darm_dct.ll'
source_filename = "darm_dct.ll"
target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7"
target triple = "amdgcn-amd-amdhsa"

; Function Attrs: mustprogress nofree nosync nounwind readnone speculatable willreturn
declare i32 @llvm.amdgcn.workitem.id.x() #0

; Function Attrs: mustprogress nofree nosync nounwind readnone speculatable willreturn
declare i32 @llvm.amdgcn.workgroup.id.x() #0

; Function Attrs: nofree nosync nounwind
define amdgpu_kernel void @darm_dct(i16 addrspace(1)* nocapture %plane, i16 addrspace(1)* nocapture readonly %q, i32 %stride, i32 %rows, i32 %bd, i32 %gd) local_unnamed_addr #1 {
entry:
  %tid = tail call i32 @llvm.amdgcn.workitem.id.x()
  %bid = tail call i32 @llvm.amdgcn.workgroup.id.x()
  %across = udiv i32 %stride, %bd
  %down = lshr i32 %rows, 3
  %tiles = mul i32 %across, %down
  %more2 = icmp ult i32 %bid, %tiles
  br i1 %more2, label %tbody, label %exit

tbody:                                            ; preds = %entry, %join.7
  %t3 = phi i32 [ %t.next, %join.7 ], [ %bid, %entry ]
  %t3.frozen = freeze i32 %t3
  %across.frozen = freeze i32 %across
  %ty = udiv i32 %t3.frozen, %across.frozen
  %0 = mul i32 %ty, %across.frozen
  %tx.decomposed = sub i32 %t3.frozen, %0
  %c0 = mul i32 %tx.decomposed, %bd
  %col = add i32 %c0, %tid
  %row0 = shl i32 %ty, 3
  %col8 = and i32 %col, 7
  %ra = mul i32 %row0, %stride
  %ri = add i32 %ra, %col
  %ri64 = zext i32 %ri to i64
  %pc = getelementptr i16, i16 addrspace(1)* %plane, i64 %ri64
  %coef16 = load i16, i16 addrspace(1)* %pc, align 2
  %coef = sext i16 %coef16 to i32
  %qi64 = zext i32 %col8 to i64
  %pq = getelementptr i16, i16 addrspace(1)* %q, i64 %qi64
  %q16 = load i16, i16 addrspace(1)* %pq, align 2
  %cq = sext i16 %q16 to i32
  %half = ashr i32 %cq, 1
  %neg = icmp slt i16 %coef16, 0
  br i1 %neg, label %negative, label %positive

negative:                                         ; preds = %tbody
  %n2 = sub nsw i32 %half, %coef
  %n3 = sdiv i32 %n2, %cq
  %n4 = sub nsw i32 0, %n3
  br label %join

positive:                                         ; preds = %tbody
  %p1 = add nsw i32 %half, %coef
  %p2 = sdiv i32 %p1, %cq
  br label %join

join:                                             ; preds = %positive, %negative
  %quant = phi i32 [ %n4, %negative ], [ %p2, %positive ]
  %1 = trunc i32 %quant to i16
  %res16 = mul i16 %q16, %1
  store i16 %res16, i16 addrspace(1)* %pc, align 2
  %rr.1 = or i32 %row0, 1
  %ra.1 = mul i32 %rr.1, %stride
  %ri.1 = add i32 %ra.1, %col
  %ri64.1 = zext i32 %ri.1 to i64
  %pc.1 = getelementptr i16, i16 addrspace(1)* %plane, i64 %ri64.1
  %coef16.1 = load i16, i16 addrspace(1)* %pc.1, align 2
  %coef.1 = sext i16 %coef16.1 to i32
  %qi.1 = or i32 %col8, 8
  %qi64.1 = zext i32 %qi.1 to i64
  %pq.1 = getelementptr i16, i16 addrspace(1)* %q, i64 %qi64.1
  %q16.1 = load i16, i16 addrspace(1)* %pq.1, align 2
  %cq.1 = sext i16 %q16.1 to i32
  %half.1 = ashr i32 %cq.1, 1
  %neg.1 = icmp slt i16 %coef16.1, 0
  br i1 %neg.1, label %negative.1, label %positive.1

positive.1:                                       ; preds = %join
  %p1.1 = add nsw i32 %half.1, %coef.1
  %p2.1 = sdiv i32 %p1.1, %cq.1
  br label %join.1

negative.1:                                       ; preds = %join
  %n2.1 = sub nsw i32 %half.1, %coef.1
  %n3.1 = sdiv i32 %n2.1, %cq.1
  %n4.1 = sub nsw i32 0, %n3.1
  br label %join.1

join.1:                                           ; preds = %negative.1, %positive.1
  %quant.1 = phi i32 [ %n4.1, %negative.1 ], [ %p2.1, %positive.1 ]
  %2 = trunc i32 %quant.1 to i16
  %res16.1 = mul i16 %q16.1, %2
  store i16 %res16.1, i16 addrspace(1)* %pc.1, align 2
  %rr.2 = or i32 %row0, 2
  %ra.2 = mul i32 %rr.2, %stride
  %ri.2 = add i32 %ra.2, %col
  %ri64.2 = zext i32 %ri.2 to i64
  %pc.2 = getelementptr i16, i16 addrspace(1)* %plane, i64 %ri64.2
  %coef16.2 = load i16, i16 addrspace(1)* %pc.2, align 2
  %coef.2 = sext i16 %coef16.2 to i32
  %qi.2 = or i32 %col8, 16
  %qi64.2 = zext i32 %qi.2 to i64
  %pq.2 = getelementptr i16, i16 addrspace(1)* %q, i64 %qi64.2
  %q16.2 = load i16, i16 addrspace(1)* %pq.2, align 2
  %cq.2 = sext i16 %q16.2 to i32
  %half.2 = ashr i32 %cq.2, 1
  %neg.2 = icmp slt i16 %coef16.2, 0
  br i1 %neg.2, label %negative.2, label %positive.2

positive.2:                                       ; preds = %join.1
  %p1.2 = add nsw i32 %half.2, %coef.2
  %p2.2 = sdiv i32 %p1.2, %cq.2
  br label %join.2

negative.2:                                       ; preds = %join.1
  %n2.2 = sub nsw i32 %half.2, %coef.2
  %n3.2 = sdiv i32 %n2.2, %cq.2
  %n4.2 = sub nsw i32 0, %n3.2
  br label %join.2

join.2:                                           ; preds = %negative.2, %positive.2
  %quant.2 = phi i32 [ %n4.2, %negative.2 ], [ %p2.2, %positive.2 ]
  %3 = trunc i32 %quant.2 to i16
  %res16.2 = mul i16 %q16.2, %3
  store i16 %res16.2, i16 addrspace(1)* %pc.2, align 2
  %rr.3 = or i32 %row0, 3
  %ra.3 = mul i32 %rr.3, %stride
  %ri.3 = add i32 %ra.3, %col
  %ri64.3 = zext i32 %ri.3 to i64
  %pc.3 = getelementptr i16, i16 addrspace(1)* %plane, i64 %ri64.3
  %coef16.3 = load i16, i16 addrspace(1)* %pc.3, align 2
  %coef.3 = sext i16 %coef16.3 to i32
  %qi.3 = or i32 %col8, 24
  %qi64.3 = zext i32 %qi.3 to i64
  %pq.3 = getelementptr i16, i16 addrspace(1)* %q, i64 %qi64.3
  %q16.3 = load i16, i16 addrspace(1)* %pq.3, align 2
  %cq.3 = sext i16 %q16.3 to i32
  %half.3 = ashr i32 %cq.3, 1
  %neg.3 = icmp slt i16 %coef16.3, 0
  br i1 %neg.3, label %negative.3, label %positive.3

positive.3:                                       ; preds = %join.2
  %p1.3 = add nsw i32 %half.3, %coef.3
  %p2.3 = sdiv i32 %p1.3, %cq.3
  br label %join.3

negative.3:                                       ; preds = %join.2
  %n2.3 = sub nsw i32 %half.3, %coef.3
  %n3.3 = sdiv i32 %n2.3, %cq.3
  %n4.3 = sub nsw i32 0, %n3.3
  br label %join.3

join.3:                                           ; preds = %negative.3, %positive.3
  %quant.3 = phi i32 [ %n4.3, %negative.3 ], [ %p2.3, %positive.3 ]
  %4 = trunc i32 %quant.3 to i16
  %res16.3 = mul i16 %q16.3, %4
  store i16 %res16.3, i16 addrspace(1)* %pc.3, align 2
  %rr.4 = or i32 %row0, 4
  %ra.4 = mul i32 %rr.4, %stride
  %ri.4 = add i32 %ra.4, %col
  %ri64.4 = zext i32 %ri.4 to i64
  %pc.4 = getelementptr i16, i16 addrspace(1)* %plane, i64 %ri64.4
  %coef16.4 = load i16, i16 addrspace(1)* %pc.4, align 2
  %coef.4 = sext i16 %coef16.4 to i32
  %qi.4 = or i32 %col8, 32
  %qi64.4 = zext i32 %qi.4 to i64
  %pq.4 = getelementptr i16, i16 addrspace(1)* %q, i64 %qi64.4
  %q16.4 = load i16, i16 addrspace(1)* %pq.4, align 2
  %cq.4 = sext i16 %q16.4 to i32
  %half.4 = ashr i32 %cq.4, 1
  %neg.4 = icmp slt i16 %coef16.4, 0
  br i1 %neg.4, label %negative.4, label %positive.4

positive.4:                                       ; preds = %join.3
  %p1.4 = add nsw i32 %half.4, %coef.4
  %p2.4 = sdiv i32 %p1.4, %cq.4
  br label %join.4

negative.4:                                       ; preds = %join.3
  %n2.4 = sub nsw i32 %half.4, %coef.4
  %n3.4 = sdiv i32 %n2.4, %cq.4
  %n4.4 = sub nsw i32 0, %n3.4
  br label %join.4

join.4:                                           ; preds = %negative.4, %positive.4
  %quant.4 = phi i32 [ %n4.4, %negative.4 ], [ %p2.4, %positive.4 ]
  %5 = trunc i32 %quant.4 to i16
  %res16.4 = mul i16 %q16.4, %5
  store i16 %res16.4, i16 addrspace(1)* %pc.4, align 2
  %rr.5 = or i32 %row0, 5
  %ra.5 = mul i32 %rr.5, %stride
  %ri.5 = add i32 %ra.5, %col
  %ri64.5 = zext i32 %ri.5 to i64
  %pc.5 = getelementptr i16, i16 addrspace(1)* %plane, i64 %ri64.5
  %coef16.5 = load i16, i16 addrspace(1)* %pc.5, align 2
  %coef.5 = sext i16 %coef16.5 to i32
  %qi.5 = or i32 %col8, 40
  %qi64.5 = zext i32 %qi.5 to i64
  %pq.5 = getelementptr i16, i16 addrspace(1)* %q, i64 %qi64.5
  %q16.5 = load i16, i16 addrspace(1)* %pq.5, align 2
  %cq.5 = sext i16 %q16.5 to i32
  %half.5 = ashr i32 %cq.5, 1
  %neg.5 = icmp slt i16 %coef16.5, 0
  br i1 %neg.5, label %negative.5, label %positive.5

positive.5:                                       ; preds = %join.4
  %p1.5 = add nsw i32 %half.5, %coef.5
  %p2.5 = sdiv i32 %p1.5, %cq.5
  br label %join.5

negative.5:                                       ; preds = %join.4
  %n2.5 = sub nsw i32 %half.5, %coef.5
  %n3.5 = sdiv i32 %n2.5, %cq.5
  %n4.5 = sub nsw i32 0, %n3.5
  br label %join.5

join.5:                                           ; preds = %negative.5, %positive.5
  %quant.5 = phi i32 [ %n4.5, %negative.5 ], [ %p2.5, %positive.5 ]
  %6 = trunc i32 %quant.5 to i16
  %res16.5 = mul i16 %q16.5, %6
  store i16 %res16.5, i16 addrspace(1)* %pc.5, align 2
  %rr.6 = or i32 %row0, 6
  %ra.6 = mul i32 %rr.6, %stride
  %ri.6 = add i32 %ra.6, %col
  %ri64.6 = zext i32 %ri.6 to i64
  %pc.6 = getelementptr i16, i16 addrspace(1)* %plane, i64 %ri64.6
  %coef16.6 = load i16, i16 addrspace(1)* %pc.6, align 2
  %coef.6 = sext i16 %coef16.6 to i32
  %qi.6 = or i32 %col8, 48
  %qi64.6 = zext i32 %qi.6 to i64
  %pq.6 = getelementptr i16, i16 addrspace(1)* %q, i64 %qi64.6
  %q16.6 = load i16, i16 addrspace(1)* %pq.6, align 2
  %cq.6 = sext i16 %q16.6 to i32
  %half.6 = ashr i32 %cq.6, 1
  %neg.6 = icmp slt i16 %coef16.6, 0
  br i1 %neg.6, label %negative.6, label %positive.6

positive.6:                                       ; preds = %join.5
  %p1.6 = add nsw i32 %half.6, %coef.6
  %p2.6 = sdiv i32 %p1.6, %cq.6
  br label %join.6

negative.6:                                       ; preds = %join.5
  %n2.6 = sub nsw i32 %half.6, %coef.6
  %n3.6 = sdiv i32 %n2.6, %cq.6
  %n4.6 = sub nsw i32 0, %n3.6
  br label %join.6

join.6:                                           ; preds = %negative.6, %positive.6
  %quant.6 = phi i32 [ %n4.6, %negative.6 ], [ %p2.6, %positive.6 ]
  %7 = trunc i32 %quant.6 to i16
  %res16.6 = mul i16 %q16.6, %7
  store i16 %res16.6, i16 addrspace(1)* %pc.6, align 2
  %rr.7 = or i32 %row0, 7
  %ra.7 = mul i32 %rr.7, %stride
  %ri.7 = add i32 %ra.7, %col
  %ri64.7 = zext i32 %ri.7 to i64
  %pc.7 = getelementptr i16, i16 addrspace(1)* %plane, i64 %ri64.7
  %coef16.7 = load i16, i16 addrspace(1)* %pc.7, align 2
  %coef.7 = sext i16 %coef16.7 to i32
  %qi.7 = or i32 %col8, 56
  %qi64.7 = zext i32 %qi.7 to i64
  %pq.7 = getelementptr i16, i16 addrspace(1)* %q, i64 %qi64.7
  %q16.7 = load i16, i16 addrspace(1)* %pq.7, align 2
  %cq.7 = sext i16 %q16.7 to i32
  %half.7 = ashr i32 %cq.7, 1
  %neg.7 = icmp slt i16 %coef16.7, 0
  br i1 %neg.7, label %negative.7, label %positive.7

positive.7:                                       ; preds = %join.6
  %p1.7 = add nsw i32 %half.7, %coef.7
  %p2.7 = sdiv i32 %p1.7, %cq.7
  br label %join.7

negative.7:                                       ; preds = %join.6
  %n2.7 = sub nsw i32 %half.7, %coef.7
  %n3.7 = sdiv i32 %n2.7, %cq.7
  %n4.7 = sub nsw i32 0, %n3.7
  br label %join.7

join.7:                                           ; preds = %negative.7, %positive.7
  %quant.7 = phi i32 [ %n4.7, %negative.7 ], [ %p2.7, %positive.7 ]
  %8 = trunc i32 %quant.7 to i16
  %res16.7 = mul i16 %q16.7, %8
  store i16 %res16.7, i16 addrspace(1)* %pc.7, align 2
  %t.next = add i32 %t3, %gd
  %more = icmp ult i32 %t.next, %tiles
  br i1 %more, label %tbody, label %exit

exit:                                             ; preds = %join.7, %entry
  ret void
}

attributes #0 = { mustprogress nofree nosync nounwind readnone speculatable willreturn }
attributes #1 = { nofree nosync nounwind }
