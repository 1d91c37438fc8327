// spmdc ispc-examples: the marshalling deferred's C++ host does, in the kernel language.
// The host passes RenderStatic an InputHeader and an InputDataArrays whose sixteen
// pointers point into the data file's chunk; this entry takes the header and each array
// as a parameter of its own, builds the same InputDataArrays, and calls the example's
// RenderStatic, compiled from its own unchanged source.
#include "kernels.ispc"

export void RenderStatic_arrays(uniform InputHeader header[],
                                uniform float zBuffer[],
                                uniform unsigned int16 normalEncoded_x[],
                                uniform unsigned int16 normalEncoded_y[],
                                uniform unsigned int16 specularAmount[],
                                uniform unsigned int16 specularPower[],
                                uniform unsigned int8 albedo_x[],
                                uniform unsigned int8 albedo_y[],
                                uniform unsigned int8 albedo_z[],
                                uniform float lightPositionView_x[],
                                uniform float lightPositionView_y[],
                                uniform float lightPositionView_z[],
                                uniform float lightAttenuationBegin[],
                                uniform float lightColor_x[],
                                uniform float lightColor_y[],
                                uniform float lightColor_z[],
                                uniform float lightAttenuationEnd[],
                                uniform int visualizeLightCount,
                                uniform unsigned int8 framebuffer_r[],
                                uniform unsigned int8 framebuffer_g[],
                                uniform unsigned int8 framebuffer_b[]) {
    uniform InputDataArrays data;
    data.zBuffer = zBuffer;
    data.normalEncoded_x = normalEncoded_x;
    data.normalEncoded_y = normalEncoded_y;
    data.specularAmount = specularAmount;
    data.specularPower = specularPower;
    data.albedo_x = albedo_x;
    data.albedo_y = albedo_y;
    data.albedo_z = albedo_z;
    data.lightPositionView_x = lightPositionView_x;
    data.lightPositionView_y = lightPositionView_y;
    data.lightPositionView_z = lightPositionView_z;
    data.lightAttenuationBegin = lightAttenuationBegin;
    data.lightColor_x = lightColor_x;
    data.lightColor_y = lightColor_y;
    data.lightColor_z = lightColor_z;
    data.lightAttenuationEnd = lightAttenuationEnd;
    RenderStatic(header[0], data, visualizeLightCount, framebuffer_r, framebuffer_g,
                 framebuffer_b);
}
