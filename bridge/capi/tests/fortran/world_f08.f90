! One MPI_COMM_WORLD across implementations (ISTHMUS_WORLD), from Fortran's
! `use mpi_f08`, as tests/fortran/world.F90 from `use mpi`: the world of
! both parts, its size and this rank, the part's MPI_APPNUM, a send across
! the parts (world rank 0 to the last rank and back), an Allreduce and the
! process topologies over the world (`topologies`, as in world.F90: the
! calls both implementations' `use mpi_f08` send past the C entry points).
! Usage: world_f08 PART0_SIZE. Prints "PASS f08 world rank R of N" per rank.
program world_f08
  use mpi_f08
  implicit none
  integer :: rank, nprocs, n0, x, total, last
  integer(kind=MPI_ADDRESS_KIND) :: appnum
  logical :: flag
  type(MPI_Status) :: st
  character(len=16) :: arg

  call MPI_Init()
  call get_command_argument(1, arg)
  read (arg, *) n0
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  if (nprocs /= 4 .or. n0 /= 2) call fail('world size', nprocs)
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, appnum, flag)
  if (.not. flag) call fail('no MPI_APPNUM', 0)
  if (rank < n0 .neqv. appnum == 0) call fail('MPI_APPNUM', int(appnum))
  last = nprocs - 1
  if (rank == 0) then
    x = 42
    call MPI_Send(x, 1, MPI_INTEGER, last, 5, MPI_COMM_WORLD)
    call MPI_Recv(x, 1, MPI_INTEGER, last, 6, MPI_COMM_WORLD, st)
    if (x /= 43 .or. st%MPI_SOURCE /= last) call fail('reply across', x)
  else if (rank == last) then
    call MPI_Recv(x, 1, MPI_INTEGER, 0, 5, MPI_COMM_WORLD, st)
    if (x /= 42 .or. st%MPI_SOURCE /= 0) call fail('send across', x)
    x = 43
    call MPI_Send(x, 1, MPI_INTEGER, 0, 6, MPI_COMM_WORLD)
  end if
  call MPI_Allreduce(rank + 1, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (total /= nprocs * (nprocs + 1) / 2) call fail('allreduce', total)
  call topologies()
  print '(a,i0,a,i0)', 'PASS f08 world rank ', rank, ' of ', nprocs
  call MPI_Finalize()

contains

  ! A 2 x 2 grid over the world (rows: one part each; columns: both parts),
  ! periodic in its second dimension, with every query, a shift and an
  ! exchange along each dimension, its columns and rows by MPI_Cart_sub,
  ! MPI_Cart_map; a ring graph over the four ranks with its queries;
  ! distributed graphs (weighted, unweighted, from one rank's edges); the
  ! neighbourhood collectives on the grid and on the weighted ring.
  subroutine topologies()
    type(MPI_Comm) :: cart, col, row, graph
    integer :: topo, nd, r, src, dst, got, n, ierr
    integer :: dims(2), gdims(2), coords(2), c2(2), index(4), edges(8), nb(2), gi(4), ge(8)
    logical :: periods(2), gperiods(2), remain(2)
    integer :: srcs(2), dsts(2), sw(2), dw(2), indeg, outdeg, one(1), deg(1), tgt(2)
    logical :: weighted
    integer :: o, nb4(4), sb4(4), sv(3), rv(3), scnt(2), sdis(2), rcnt(2), rdis(2)
    type(MPI_Request) :: req
    dims = (/2, 2/)
    periods = (/.false., .true./)
    call MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, .false., cart, ierr)
    if (ierr /= MPI_SUCCESS) call fail('cart_create', ierr)
    if (cart == MPI_COMM_NULL) call fail('cart_create: no grid', 0)
    call MPI_Topo_test(cart, topo)
    if (topo /= MPI_CART) call fail('topo_test of the grid', topo)
    call MPI_Topo_test(MPI_COMM_WORLD, topo)
    if (topo /= MPI_UNDEFINED) call fail('topo_test of the world', topo)
    call MPI_Cartdim_get(cart, nd)
    if (nd /= 2) call fail('cartdim_get', nd)
    call MPI_Cart_get(cart, 2, gdims, gperiods, coords)
    if (any(gdims /= dims)) call fail('cart_get dims', gdims(1))
    if (gperiods(1) .or. .not. gperiods(2)) call fail('cart_get periods', 0)
    if (coords(1) /= rank / 2 .or. coords(2) /= mod(rank, 2)) call fail('cart_get coords', coords(1))
    call MPI_Cart_coords(cart, rank, 2, c2)
    if (any(c2 /= coords)) call fail('cart_coords', c2(1))
    call MPI_Cart_rank(cart, coords, r)
    if (r /= rank) call fail('cart_rank', r)
    call MPI_Cart_shift(cart, 1, 1, src, dst)
    if (src /= dst .or. dst /= 2 * (rank / 2) + 1 - mod(rank, 2)) call fail('periodic shift', dst)
    call MPI_Cart_shift(cart, 0, 1, src, dst)
    if (rank < 2 .and. (src /= MPI_PROC_NULL .or. dst /= rank + 2)) call fail('shift down', dst)
    if (rank >= 2 .and. (src /= rank - 2 .or. dst /= MPI_PROC_NULL)) call fail('shift up', src)
    got = -1
    call MPI_Sendrecv(rank, 1, MPI_INTEGER, dst, 7, got, 1, MPI_INTEGER, src, 7, cart, &
                      MPI_STATUS_IGNORE)
    if (rank >= 2 .and. got /= rank - 2) call fail('exchange down the grid', got)
    if (rank < 2 .and. got /= -1) call fail('exchange from no neighbour', got)
    remain = (/.true., .false./)
    call MPI_Cart_sub(cart, remain, col)
    call MPI_Comm_size(col, n)
    call MPI_Allreduce(rank, got, 1, MPI_INTEGER, MPI_SUM, col)
    if (n /= 2 .or. got /= 2 + 2 * mod(rank, 2)) call fail('column', got)
    call MPI_Cart_get(col, 1, gdims, gperiods, coords)
    if (gdims(1) /= 2 .or. gperiods(1) .or. coords(1) /= rank / 2) call fail('column grid', coords(1))
    remain = (/.false., .true./)
    call MPI_Cart_sub(cart, remain, row)
    call MPI_Cartdim_get(row, nd)
    call MPI_Cart_get(row, 1, gdims, gperiods, coords)
    if (nd /= 1 .or. .not. gperiods(1) .or. coords(1) /= mod(rank, 2)) call fail('row grid', nd)
    call MPI_Cart_map(MPI_COMM_WORLD, 2, dims, periods, r)
    if (r /= rank) call fail('cart_map', r)
    call MPI_Comm_free(row)
    call MPI_Comm_free(col)
    ! Neighbourhood collectives on the grid: per dimension the negative
    ! side's block, then the positive side's; MPI_PROC_NULL leaves its
    ! block alone; on the periodic dimension of extent 2 both neighbours
    ! are one rank, and the negative side's block is the one it sent in
    ! the positive direction.
    o = 2 * (rank / 2) + 1 - mod(rank, 2)
    nb4 = -1
    call MPI_Neighbor_allgather(rank, 1, MPI_INTEGER, nb4, 1, MPI_INTEGER, cart)
    if (rank >= 2 .and. nb4(1) /= rank - 2) call fail('neighbor_allgather from above', nb4(1))
    if (rank < 2 .and. (nb4(1) /= -1 .or. nb4(2) /= rank + 2)) call fail('neighbor_allgather edge', nb4(2))
    if (nb4(3) /= o .or. nb4(4) /= o) call fail('neighbor_allgather along the ring', nb4(3))
    sb4 = (/100 * rank + 1, 100 * rank + 2, 100 * rank + 3, 100 * rank + 4/)
    nb4 = -1
    call MPI_Ineighbor_alltoall(sb4, 1, MPI_INTEGER, nb4, 1, MPI_INTEGER, cart, req)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
    if (rank >= 2 .and. nb4(1) /= 100 * (rank - 2) + 2) call fail('ineighbor_alltoall from above', nb4(1))
    if (rank < 2 .and. (nb4(1) /= -1 .or. nb4(2) /= 100 * (rank + 2) + 1)) &
      call fail('ineighbor_alltoall edge', nb4(2))
    if (nb4(3) /= 100 * o + 4 .or. nb4(4) /= 100 * o + 3) call fail('ineighbor_alltoall pairing', nb4(3))
    call MPI_Comm_free(cart)

    index = (/2, 4, 6, 8/)
    edges = (/1, 3, 0, 2, 1, 3, 2, 0/)
    call MPI_Graph_create(MPI_COMM_WORLD, 4, index, edges, .true., graph)
    call MPI_Topo_test(graph, topo)
    if (topo /= MPI_GRAPH) call fail('topo_test of the graph', topo)
    call MPI_Graphdims_get(graph, n, nd)
    if (n /= 4 .or. nd /= 8) call fail('graphdims_get', nd)
    call MPI_Graph_get(graph, 4, 8, gi, ge)
    if (any(gi /= index) .or. any(ge /= edges)) call fail('graph_get', ge(1))
    call MPI_Graph_neighbors_count(graph, rank, n)
    call MPI_Graph_neighbors(graph, rank, 2, nb)
    if (n /= 2 .or. nb(1) /= edges(2 * rank + 1) .or. nb(2) /= edges(2 * rank + 2)) &
      call fail('graph_neighbors', nb(1))
    call MPI_Graph_map(MPI_COMM_WORLD, 4, index, edges, r)
    if (r /= rank) call fail('graph_map', r)
    call MPI_Comm_free(graph)

    ! Distributed graphs: a weighted ring (each rank's left and right
    ! neighbours, weight 10 + the neighbour's rank), an unweighted one
    ! (MPI_UNWEIGHTED in and out), and one that rank 0 alone describes
    ! with MPI_Dist_graph_create (the others name no node: MPI_WEIGHTS_EMPTY).
    srcs = (/mod(rank + 3, 4), mod(rank + 1, 4)/)
    sw = 10 + srcs
    call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, srcs, sw, 2, srcs, sw, &
                                        MPI_INFO_NULL, .false., graph)
    call MPI_Topo_test(graph, topo)
    if (topo /= MPI_DIST_GRAPH) call fail('topo_test of the distributed graph', topo)
    call MPI_Dist_graph_neighbors_count(graph, indeg, outdeg, weighted)
    if (indeg /= 2 .or. outdeg /= 2 .or. .not. weighted) call fail('dist_graph_neighbors_count', indeg)
    dsts = -1
    dw = -1
    call MPI_Dist_graph_neighbors(graph, 2, dsts, dw, 2, tgt, dw)
    if (any(dsts /= srcs) .or. any(tgt /= srcs) .or. any(dw /= sw)) call fail('dist_graph_neighbors', dw(1))
    got = -1
    call MPI_Sendrecv(rank, 1, MPI_INTEGER, srcs(2), 8, got, 1, MPI_INTEGER, srcs(1), 8, graph, &
                      MPI_STATUS_IGNORE)
    if (got /= srcs(1)) call fail('exchange on the distributed graph', got)
    ! Neighbourhood collectives on it: to the left one int, to the right
    ! two; an allgatherv of each rank's value. (No alltoallw: MPICH's
    ! use mpi_f08 asks PMPI_Dist_graph_neighbors_count, past libisthmus,
    ! how many types to convert, which the merged graph's local handle
    ! cannot answer.)
    sv = (/1000 * rank + 1, 1000 * rank + 2, 1000 * rank + 3/)
    scnt = (/1, 2/)
    sdis = (/0, 1/)
    rcnt = (/2, 1/)
    rdis = (/0, 2/)
    rv = -1
    call MPI_Neighbor_alltoallv(sv, scnt, sdis, MPI_INTEGER, rv, rcnt, rdis, MPI_INTEGER, graph)
    if (rv(1) /= 1000 * srcs(1) + 2 .or. rv(2) /= 1000 * srcs(1) + 3 .or. rv(3) /= 1000 * srcs(2) + 1) &
      call fail('neighbor_alltoallv', rv(1))
    rv = -1
    scnt = (/1, 1/)
    rdis = (/1, 0/)
    call MPI_Neighbor_allgatherv(rank, 1, MPI_INTEGER, rv, scnt, rdis, MPI_INTEGER, graph)
    if (rv(2) /= srcs(1) .or. rv(1) /= srcs(2)) call fail('neighbor_allgatherv', rv(1))
    call MPI_Comm_free(graph)
    call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, srcs, MPI_UNWEIGHTED, 2, srcs, &
                                        MPI_UNWEIGHTED, MPI_INFO_NULL, .false., graph)
    call MPI_Dist_graph_neighbors_count(graph, indeg, outdeg, weighted)
    if (weighted) call fail('an unweighted graph reported weighted', indeg)
    call MPI_Dist_graph_neighbors(graph, 2, dsts, MPI_UNWEIGHTED, 2, tgt, MPI_UNWEIGHTED)
    if (any(dsts /= srcs) .or. any(tgt /= srcs)) call fail('unweighted neighbours', dsts(1))
    call MPI_Comm_free(graph)
    if (rank == 0) then
      ! Rank 0 names the edges 0 -> 1 and 0 -> 3.
      one = (/0/)
      deg = (/2/)
      tgt = (/1, 3/)
      call MPI_Dist_graph_create(MPI_COMM_WORLD, 1, one, deg, tgt, MPI_UNWEIGHTED, &
                                 MPI_INFO_NULL, .false., graph)
    else
      call MPI_Dist_graph_create(MPI_COMM_WORLD, 0, one, deg, tgt, MPI_WEIGHTS_EMPTY, &
                                 MPI_INFO_NULL, .false., graph)
    end if
    call MPI_Dist_graph_neighbors_count(graph, indeg, outdeg, weighted)
    if (rank == 0 .and. (indeg /= 0 .or. outdeg /= 2)) call fail('edges of rank 0', outdeg)
    if (mod(rank, 2) == 1 .and. (indeg /= 1 .or. outdeg /= 0)) call fail('edges into an odd rank', indeg)
    if (rank == 2 .and. (indeg /= 0 .or. outdeg /= 0)) call fail('edges of rank 2', indeg)
    call MPI_Comm_free(graph)
  end subroutine topologies

  subroutine fail(what, got)
    character(len=*), intent(in) :: what
    integer, intent(in) :: got
    print '(a,i0,a,a,a,i0)', 'rank ', rank, ': FAIL ', what, ': ', got
    call MPI_Abort(MPI_COMM_WORLD, 2)
  end subroutine fail
end program world_f08
